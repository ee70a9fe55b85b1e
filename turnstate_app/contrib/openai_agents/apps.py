from __future__ import annotations

from django.apps import AppConfig


class OpenAIAgentsConfig(AppConfig):
    name = "turnstate_app.contrib.openai_agents"
    label = "turnstate_openai_agents"
    verbose_name = "OpenAI Agents SDK runs and sessions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from turnstate_app.contrib.openai_agents.codec import ITEM_IDENTITY, STATE_IDENTITY
        from turnstate_app.contrib.openai_agents.models import StoredRunState, StoredSessionItem
        from turnstate_app.contrib.openai_agents.retention import connect_retention
        from turnstate_app.sealed_tables import SealedTable, register

        # What turnstate_rotate_keys re-encrypts: run states by their pauses' thread, items by session;
        # each row's MAC names it by the columns the codec uses.
        register(SealedTable(StoredRunState, "state", thread="thread_id", identity=STATE_IDENTITY))
        register(SealedTable(StoredSessionItem, "item", thread="session_id", identity=ITEM_IDENTITY))

        # The core's erasure and purge announce the threads they cleared; states and sessions follow.
        connect_retention()
