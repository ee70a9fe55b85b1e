"""The store's two tables: one record per conversation, one row per message entry.

A conversation's history is a chain of entries, each pointing at the one before it;
forks and branches share entries rather than copying them, so an entry belongs to the
conversation that stored it (``conversation_id``) and may be reached by others (its
forks). Ids compare byte for byte on every database (see migration 0002).

Structured values are kept as the JSON PydanticAI's own adapters write
(``ModelMessagesTypeAdapter`` for a message), so a row reads back exactly as saved. A message
and a record's deferred tool calls each carry a MAC (``value_mac``, :mod:`.codec`) that a read
checks first.
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from turnstate_app.contrib.pydantic_ai.keys import (
    CONVERSATION_ID_MAX_LENGTH,
    ENTRY_ID_MAX_LENGTH,
    KIND_MAX_LENGTH,
    REVISION_MAX_LENGTH,
    SCOPE_MAX_LENGTH,
)
from turnstate_app.encryption import KEY_ID_LENGTH
from turnstate_app.integrity import MAC_LENGTH

RECORD_IDENTITY = ("conversation_id",)
"""The columns that name a record in its MAC."""
ENTRY_IDENTITY = ("conversation_id", "entry_id", "parent_id")
"""The columns that name an entry in its MAC: its conversation, itself, and the entry before it."""

KEY_ID_HELP = _("The id of the key the value is encrypted with; empty when it is stored clear.")
MAC_HELP = _(
    "Binds the stored value to this row and its key id, keyed from SECRET_KEY: a value changed at "
    "rest no longer matches it and is not read."
)


def value_mac_field() -> models.CharField:  # type: ignore[type-arg]
    return models.CharField(_("value MAC"), max_length=MAC_LENGTH, null=True, blank=True, help_text=MAC_HELP)


class ConversationQuerySet(models.QuerySet["StoredConversation"]):
    def for_ids(self, conversation_ids: list[str]) -> ConversationQuerySet:
        return self.filter(conversation_id__in=conversation_ids)

    def forks_of(self, conversation_ids: list[str]) -> ConversationQuerySet:
        return self.filter(forked_from__in=conversation_ids)


class StoredConversation(models.Model):
    """A ``ConversationRecord``: where the history ends, and what the messages cannot carry."""

    conversation_id = models.CharField(
        _("conversation id"), max_length=CONVERSATION_ID_MAX_LENGTH, unique=True
    )
    scope = models.CharField(
        _("scope"),
        max_length=SCOPE_MAX_LENGTH,
        null=True,
        blank=True,
        help_text=_("Whose or where the conversation is (a user, a channel)."),
    )
    head_id = models.CharField(
        _("head entry"),
        max_length=ENTRY_ID_MAX_LENGTH,
        null=True,
        blank=True,
        help_text=_("The newest message."),
    )
    revision = models.CharField(
        _("revision"),
        max_length=REVISION_MAX_LENGTH,
        help_text=_("Changes on every save; compared for equality."),
    )
    usage = models.TextField(_("usage"), help_text=_("RunUsage, as JSON."))
    deferred_tool_requests = models.TextField(
        _("deferred tool requests"),
        null=True,
        blank=True,
        help_text=_("The tool calls the conversation waits on, as JSON."),
    )
    encryption_key_id = models.CharField(
        _("encryption key id"), max_length=KEY_ID_LENGTH, null=True, blank=True, help_text=KEY_ID_HELP
    )
    value_mac = value_mac_field()
    branches = models.TextField(
        _("branches"), default="[]", help_text=_("Tips of the histories it left, as JSON.")
    )
    forked_from = models.CharField(
        _("forked from"), max_length=CONVERSATION_ID_MAX_LENGTH, null=True, blank=True
    )
    forked_at = models.CharField(_("forked at entry"), max_length=ENTRY_ID_MAX_LENGTH, null=True, blank=True)
    format_version = models.PositiveSmallIntegerField(_("format version"), default=1)
    updated_at = models.DateTimeField(_("updated at"))

    objects = ConversationQuerySet.as_manager()

    class Meta:
        verbose_name = _("PydanticAI conversation")
        verbose_name_plural = _("PydanticAI conversations")
        indexes = [
            models.Index(fields=["scope", "updated_at"], name="turnstate_pai_scope_idx"),
            models.Index(fields=["updated_at"], name="turnstate_pai_updated_idx"),
            models.Index(fields=["forked_from"], name="turnstate_pai_forked_idx"),
            models.Index(fields=["forked_at"], name="turnstate_pai_forked_at_idx"),
        ]

    def __str__(self) -> str:
        return self.conversation_id


class StoredEntry(models.Model):
    """A ``ConversationEntry``: one message, and the entry before it."""

    entry_id = models.CharField(_("entry id"), max_length=ENTRY_ID_MAX_LENGTH, unique=True)
    parent_id = models.CharField(_("parent entry"), max_length=ENTRY_ID_MAX_LENGTH, null=True, blank=True)
    conversation_id = models.CharField(
        _("stored by"),
        max_length=CONVERSATION_ID_MAX_LENGTH,
        help_text=_("The conversation whose save stored it; its forks may reach it too."),
    )
    kind = models.CharField(_("kind"), max_length=KIND_MAX_LENGTH, default="message")
    message = models.TextField(
        _("message"), help_text=_("A one-message list, as ModelMessagesTypeAdapter JSON.")
    )
    encryption_key_id = models.CharField(
        _("encryption key id"), max_length=KEY_ID_LENGTH, null=True, blank=True, help_text=KEY_ID_HELP
    )
    value_mac = value_mac_field()
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("PydanticAI conversation entry")
        verbose_name_plural = _("PydanticAI conversation entries")
        indexes = [
            models.Index(fields=["conversation_id"], name="turnstate_pai_entry_conv_idx"),
            models.Index(fields=["parent_id"], name="turnstate_pai_entry_parent_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.conversation_id} / {self.entry_id}"
