"""The contrib's two tables: a session's items, and each paused run's latest state.

Values go through :mod:`turnstate_app.contrib.openai_agents.codec` (``item``, ``state``): with
keys configured they are encrypted at rest, each row's key id in ``encryption_key_id``; either
way each value is bound to its row by the MAC in ``value_mac`` (:mod:`turnstate_app.integrity`).
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from turnstate_app.encryption import KEY_ID_LENGTH
from turnstate_app.integrity import MAC_LENGTH

ID_MAX_LENGTH = 255  # also the core's thread_id: a session, or a run without one, is a pause's thread
REVISION_MAX_LENGTH = 64
SCHEMA_MAX_LENGTH = 32
KEY_ID_HELP = _("The id of the key the value is encrypted with; empty when it is stored clear.")
MAC_HELP = _(
    "Binds the stored value to this row and its key id, keyed from SECRET_KEY: a value changed at "
    "rest no longer matches it and is not read."
)


def value_mac_field() -> models.CharField[str | None, str | None]:
    return models.CharField(_("value MAC"), max_length=MAC_LENGTH, null=True, blank=True, help_text=MAC_HELP)


class StoredSessionItem(models.Model):
    """One item of an SDK ``Session``; the primary key orders them."""

    session_id = models.CharField(_("session id"), max_length=ID_MAX_LENGTH)
    item = models.TextField(_("item"), help_text=_("One TResponseInputItem, as JSON."))
    encryption_key_id = models.CharField(
        _("encryption key id"), max_length=KEY_ID_LENGTH, null=True, blank=True, help_text=KEY_ID_HELP
    )
    value_mac = value_mac_field()
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("OpenAI Agents session item")
        verbose_name_plural = _("OpenAI Agents session items")
        indexes = [models.Index(fields=["session_id", "id"], name="turnstate_oai_item_sess_idx")]

    def __str__(self) -> str:
        return f"{self.session_id} #{self.pk}"


class StoredRunState(models.Model):
    """The latest ``RunState`` of a paused run, replaced only at the revision it was read at."""

    run_id = models.CharField(_("run id"), max_length=ID_MAX_LENGTH, unique=True)
    thread_id = models.CharField(
        _("thread id"),
        max_length=ID_MAX_LENGTH,
        help_text=_("The SDK session's id when the run used one, else the run id: its pauses' thread."),
    )
    session_id = models.CharField(_("session id"), max_length=ID_MAX_LENGTH, null=True, blank=True)
    agent = models.CharField(_("agent"), max_length=ID_MAX_LENGTH, help_text=_("The starting agent's name."))
    revision = models.CharField(
        _("revision"),
        max_length=REVISION_MAX_LENGTH,
        help_text=_("Changes on every write; compared for equality."),
    )
    schema_version = models.CharField(
        _("schema version"),
        max_length=SCHEMA_MAX_LENGTH,
        help_text=_("The SDK's RunState schema it was written in."),
    )
    state = models.TextField(_("state"), help_text=_("RunState.to_string()."))
    encryption_key_id = models.CharField(
        _("encryption key id"), max_length=KEY_ID_LENGTH, null=True, blank=True, help_text=KEY_ID_HELP
    )
    value_mac = value_mac_field()
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("OpenAI Agents run state")
        verbose_name_plural = _("OpenAI Agents run states")
        indexes = [models.Index(fields=["thread_id"], name="turnstate_oai_state_thread_idx")]

    def __str__(self) -> str:
        return f"{self.run_id} @ {self.revision}"
