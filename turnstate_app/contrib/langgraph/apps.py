from __future__ import annotations

from django.apps import AppConfig
from django.core import checks


class LangGraphConfig(AppConfig):
    name = "turnstate_app.contrib.langgraph"
    label = "turnstate_langgraph"
    verbose_name = "LangGraph checkpoints"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from turnstate_app.contrib.langgraph.checks import check_serde_policy
        from turnstate_app.contrib.langgraph.integrity import BLOB, CHECKPOINT, WRITE
        from turnstate_app.contrib.langgraph.models import ChannelBlob, Checkpoint, CheckpointWrite
        from turnstate_app.contrib.langgraph.retention import connect_retention
        from turnstate_app.sealed_tables import SealedTable, register

        # What turnstate_rotate_keys re-encrypts: every serialized value (the metadata stays clear),
        # each with the columns its MAC covers.
        register(SealedTable(Checkpoint, "checkpoint", binary=True, identity=CHECKPOINT.identity))
        register(SealedTable(ChannelBlob, "blob", binary=True, identity=BLOB.identity))
        register(SealedTable(CheckpointWrite, "blob", binary=True, identity=WRITE.identity))
        checks.register(check_serde_policy, "turnstate")
        # The core's erasure and purge announce the threads they cleared; the saver's rows follow.
        connect_retention()
