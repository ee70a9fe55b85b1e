from __future__ import annotations

from django.apps import AppConfig


class GoogleADKConfig(AppConfig):
    name = "turnstate_app.contrib.google_adk"
    label = "turnstate_google_adk"
    verbose_name = "Google ADK sessions and confirmations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from turnstate_app.contrib.google_adk.codec import APP_STATE, EVENT, SESSION, USER_STATE
        from turnstate_app.contrib.google_adk.retention import connect_retention
        from turnstate_app.sealed_tables import SealedTable, register

        # What turnstate_rotate_keys re-encrypts, each value with the keys of the column the codec seals
        # it with; each row's MAC names it by the codec's identity columns.
        for kind in (SESSION, EVENT, APP_STATE, USER_STATE):
            value = "event" if kind is EVENT else "state"
            register(SealedTable(kind.model, value, thread=kind.thread, identity=kind.identity))

        # The core's erasure and purge announce the threads they cleared; their sessions follow.
        connect_retention()
