from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = "Demo agents"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from agents.inbox import keep_token
        from turnstate_app.pauses import pause_minted

        pause_minted.connect(keep_token, dispatch_uid="agents_inbox")
