from django.apps import AppConfig


class AgentsConfig(AppConfig):
    # The package is not called ``agents``: that is the OpenAI Agents SDK's import name. The label
    # stays, so the tables and the migrations' history stay too.
    name = "demo_agents"
    label = "agents"
    verbose_name = "Demo agents"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from demo_agents.inbox import keep_token
        from turnstate_app.pauses import pause_minted

        pause_minted.connect(keep_token, dispatch_uid="agents_inbox")
