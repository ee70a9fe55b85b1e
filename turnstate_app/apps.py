from __future__ import annotations

from django.apps import AppConfig
from django.conf import settings
from django.core import checks
from django.core.signals import setting_changed
from django.db.models.signals import pre_delete


class TurnstateConfig(AppConfig):
    name = "turnstate_app"
    verbose_name = "Turn state"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models import Q

        from turnstate_app.checks import (
            check_contrib_migrations,
            check_databases,
            check_integrations,
            check_packet_limit,
            check_settings,
        )
        from turnstate_app.conf import conf
        from turnstate_app.models import CheckpointMetadata, RowKind
        from turnstate_app.ports.default import reset_default_store
        from turnstate_app.retention import erase_owned_pauses
        from turnstate_app.sealed_tables import SealedTable, register

        # Requests, turn states and answers are sealed; claims and heartbeats stay clear.
        # Every row carries a MAC of its place, key id and stored value (turnstate_app.integrity).
        register(
            SealedTable(
                CheckpointMetadata,
                "value",
                scope=~Q(kind=RowKind.OTHER),
                identity=("thread_id", "checkpoint_id", "key"),
            )
        )
        checks.register(check_settings, "turnstate")
        checks.register(check_packet_limit, "turnstate", checks.Tags.database)
        checks.register(check_databases, "turnstate")
        checks.register(check_contrib_migrations, "turnstate", checks.Tags.database)
        checks.register(check_integrations, "turnstate")
        setting_changed.connect(conf.reset, dispatch_uid="turnstate_reset_conf")
        setting_changed.connect(reset_default_store, dispatch_uid="turnstate_reset_store")
        # A deleted person's pauses cascade; this removes the rows those pauses left in the store.
        pre_delete.connect(
            erase_owned_pauses, sender=settings.AUTH_USER_MODEL, dispatch_uid="turnstate_erase_owned"
        )
