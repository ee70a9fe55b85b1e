from __future__ import annotations

from django.apps import AppConfig


class PydanticAIConfig(AppConfig):
    name = "turnstate_app.contrib.pydantic_ai"
    label = "turnstate_pydantic_ai"
    verbose_name = "PydanticAI conversations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from turnstate_app.contrib.pydantic_ai.models import (
            ENTRY_IDENTITY,
            RECORD_IDENTITY,
            StoredConversation,
            StoredEntry,
        )
        from turnstate_app.contrib.pydantic_ai.retention import connect_retention
        from turnstate_app.sealed_tables import SealedTable, register

        # What turnstate_rotate_keys re-encrypts: messages and waiting tool calls, by conversation,
        # each row's MAC over the columns that name it.
        register(SealedTable(StoredEntry, "message", thread="conversation_id", identity=ENTRY_IDENTITY))
        register(
            SealedTable(
                StoredConversation,
                "deferred_tool_requests",
                thread="conversation_id",
                identity=RECORD_IDENTITY,
            )
        )

        # The core's erasure and purge announce the threads they cleared; conversations follow.
        connect_retention()
