"""Google ADK's sessions on Django's database: sessions, their events, app state and user state.

Every JSON value (a session's state, an event, an app's or a user's state) goes through
:mod:`turnstate_app.contrib.google_adk.codec`: with keys configured it is encrypted at rest, the
row's key id in ``encryption_key_id``; either way it is bound to its row by the MAC in ``value_mac``
(:mod:`turnstate_app.integrity`). Ids and times stay clear, so lookups and ordering are indexed.
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from turnstate_app.encryption import KEY_ID_LENGTH
from turnstate_app.integrity import MAC_LENGTH

NAME_MAX_LENGTH = 128  # ADK's own key length for app names and user ids (DatabaseSessionService)
ID_MAX_LENGTH = 255  # the core's thread_id: a session is its pauses' thread
KEY_ID_HELP = _("The id of the key the value is encrypted with; empty when it is stored clear.")
MAC_HELP = _(
    "Binds the stored value to this row and its key id, keyed from SECRET_KEY: a value changed at "
    "rest no longer matches it and is not read."
)


def key_id_field() -> models.CharField[str | None, str | None]:
    return models.CharField(
        _("encryption key id"), max_length=KEY_ID_LENGTH, null=True, blank=True, help_text=KEY_ID_HELP
    )


def value_mac_field() -> models.CharField[str | None, str | None]:
    return models.CharField(_("value MAC"), max_length=MAC_LENGTH, null=True, blank=True, help_text=MAC_HELP)


class StoredSession(models.Model):
    """One ADK session: its own state (no ``app:``/``user:``/``temp:`` keys) and its revision time."""

    app_name = models.CharField(_("app name"), max_length=NAME_MAX_LENGTH)
    user_id = models.CharField(_("user id"), max_length=NAME_MAX_LENGTH)
    session_id = models.CharField(_("session id"), max_length=ID_MAX_LENGTH)
    state = models.TextField(_("state"), help_text=_("The session-scoped state, as JSON."))
    encryption_key_id = key_id_field()
    value_mac = value_mac_field()
    created_at = models.DateTimeField(_("created at"))
    updated_at = models.DateTimeField(
        _("updated at"),
        help_text=_(
            "The last event's timestamp (the creation time before any): the session's revision, "
            "compared with the caller's last_update_time before an event is appended."
        ),
    )

    class Meta:
        verbose_name = _("Google ADK session")
        verbose_name_plural = _("Google ADK sessions")
        constraints = [
            models.UniqueConstraint(
                fields=["app_name", "user_id", "session_id"], name="turnstate_adk_session_uniq"
            )
        ]
        indexes = [
            models.Index(fields=["app_name", "updated_at"], name="turnstate_adk_session_list_idx"),
            models.Index(fields=["session_id"], name="turnstate_adk_session_id_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.app_name}/{self.user_id}/{self.session_id}"


class StoredEvent(models.Model):
    """One event of a session, as ADK serialises it; read in (timestamp, insertion) order."""

    session = models.ForeignKey(
        StoredSession, on_delete=models.CASCADE, related_name="events", verbose_name=_("session")
    )
    event_id = models.CharField(_("event id"), max_length=ID_MAX_LENGTH)
    invocation_id = models.CharField(_("invocation id"), max_length=ID_MAX_LENGTH)
    timestamp = models.DateTimeField(_("timestamp"))
    event = models.TextField(
        _("event"), help_text=_("Event.model_dump(exclude_none=True, mode='json'), as JSON.")
    )
    encryption_key_id = key_id_field()
    value_mac = value_mac_field()

    class Meta:
        verbose_name = _("Google ADK event")
        verbose_name_plural = _("Google ADK events")
        constraints = [
            models.UniqueConstraint(fields=["session", "event_id"], name="turnstate_adk_event_uniq")
        ]
        indexes = [
            models.Index(fields=["session", "timestamp", "id"], name="turnstate_adk_event_order_idx"),
            models.Index(fields=["invocation_id"], name="turnstate_adk_event_inv_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.event_id} ({self.invocation_id})"


class StoredAppState(models.Model):
    """The ``app:`` state of an app, shared by every session of it (stored without the prefix)."""

    app_name = models.CharField(_("app name"), max_length=NAME_MAX_LENGTH, unique=True)
    state = models.TextField(_("state"), help_text=_("The app-scoped state, as JSON."))
    encryption_key_id = key_id_field()
    value_mac = value_mac_field()
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("Google ADK app state")
        verbose_name_plural = _("Google ADK app states")

    def __str__(self) -> str:
        return self.app_name


class StoredUserState(models.Model):
    """The ``user:`` state of a user of an app, shared by their sessions (stored without the prefix)."""

    app_name = models.CharField(_("app name"), max_length=NAME_MAX_LENGTH)
    user_id = models.CharField(_("user id"), max_length=NAME_MAX_LENGTH)
    state = models.TextField(_("state"), help_text=_("The user-scoped state, as JSON."))
    encryption_key_id = key_id_field()
    value_mac = value_mac_field()
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("Google ADK user state")
        verbose_name_plural = _("Google ADK user states")
        constraints = [
            models.UniqueConstraint(fields=["app_name", "user_id"], name="turnstate_adk_user_state_uniq")
        ]

    def __str__(self) -> str:
        return f"{self.app_name}/{self.user_id}"
