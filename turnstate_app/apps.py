from __future__ import annotations

from django.apps import AppConfig
from django.core import checks
from django.core.signals import setting_changed


class TurnstateConfig(AppConfig):
    name = "turnstate_app"
    verbose_name = "Turn state"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from turnstate_app.checks import check_settings
        from turnstate_app.ports.default import reset_default_store

        checks.register(check_settings, "turnstate")
        setting_changed.connect(reset_default_store, dispatch_uid="turnstate_reset_store")
