from __future__ import annotations

from django.apps import AppConfig


class PydanticAIConfig(AppConfig):
    name = "turnstate_app.contrib.pydantic_ai"
    label = "turnstate_pydantic_ai"
    verbose_name = "PydanticAI conversations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from turnstate_app.contrib.pydantic_ai.retention import connect_retention

        # The core's erasure and purge announce the threads they cleared; conversations follow.
        connect_retention()
