"""The saver's three tables: checkpoints, channel values by version, and pending writes.

A channel's value is stored once per version, so a checkpoint that leaves a channel
unchanged costs no copy of it. ``checkpoint_ns`` (nested subgraph paths grow without
bound) is kept whole in a text column and keyed by its SHA-256 (``ns_hash``), which
keeps every unique index small enough for PostgreSQL's btree entries and MariaDB's
key length. Ids compare byte for byte on every database (see migration 0002). Each table's
``id`` is a :class:`~turnstate_app.contrib.langgraph.fields.RowId` (SQLite's plain rowid; see
migration 0003).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Count, Exists, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils.translation import gettext_lazy as _

from turnstate_app.contrib.langgraph.fields import RowId
from turnstate_app.contrib.langgraph.keys import (
    HASH_LENGTH,
    NAME_MAX_LENGTH,
    ROOT_NS_HASH,
    SHORT_ID_MAX_LENGTH,
    THREAD_ID_MAX_LENGTH,
)
from turnstate_app.encryption import KEY_ID_LENGTH
from turnstate_app.integrity import MAC_LENGTH

TYPE_MAX_LENGTH = 32
KEY_ID_HELP = _("The id of the key the serialized value is encrypted with; empty when it is stored clear.")
MAC_HELP = _(
    "The MAC (keyed from SECRET_KEY) of the row's identity, key id and stored value, written with the "
    "value; a row whose MAC is missing or wrong is unreadable."
)

# LangGraph's channels for interrupts and their answers (``langgraph.checkpoint.serde.types``).
INTERRUPT_CHANNEL = "__interrupt__"
RESUME_CHANNEL = "__resume__"


class CheckpointQuerySet(models.QuerySet["Checkpoint"]):
    def for_threads(self, thread_ids: list[str]) -> CheckpointQuerySet:
        return self.filter(thread_id__in=thread_ids)

    def heads(self) -> CheckpointQuerySet:
        """The newest checkpoint of each thread's root namespace (one row per thread)."""
        newer = Checkpoint.objects.filter(
            thread_id=OuterRef("thread_id"),
            ns_hash=OuterRef("ns_hash"),
            checkpoint_id__gt=OuterRef("checkpoint_id"),
        )
        return self.filter(ns_hash=ROOT_NS_HASH).exclude(Exists(newer))

    def with_pending_interrupts(self) -> CheckpointQuerySet:
        """Annotate ``pending_interrupts``: tasks at this checkpoint stopped by an interrupt, unanswered."""
        answered = CheckpointWrite.objects.filter(
            thread_id=OuterRef("thread_id"),
            ns_hash=OuterRef("ns_hash"),
            checkpoint_id=OuterRef("checkpoint_id"),
            task_id=OuterRef("task_id"),
            channel=RESUME_CHANNEL,
        )
        waiting = (
            CheckpointWrite.objects.filter(
                thread_id=OuterRef("thread_id"),
                ns_hash=OuterRef("ns_hash"),
                checkpoint_id=OuterRef("checkpoint_id"),
                channel=INTERRUPT_CHANNEL,
            )
            .exclude(Exists(answered))
            .order_by()
            .values("checkpoint_id")
            .annotate(n=Count("pk"))
            .values("n")
        )
        return self.annotate(
            pending_interrupts=Coalesce(Subquery(waiting, output_field=models.IntegerField()), 0)
        )


class Checkpoint(models.Model):
    """One LangGraph checkpoint: its serialized body (without channel values) and metadata."""

    id = RowId(primary_key=True, serialize=False, verbose_name="ID")

    thread_id = models.CharField(_("thread id"), max_length=THREAD_ID_MAX_LENGTH)
    checkpoint_ns = models.TextField(
        _("checkpoint namespace"),
        blank=True,
        help_text=_("Empty for the root graph; a subgraph's path else."),
    )
    ns_hash = models.CharField(
        _("namespace hash"), max_length=HASH_LENGTH, help_text=_("SHA-256 of the namespace.")
    )
    checkpoint_id = models.CharField(_("checkpoint id"), max_length=SHORT_ID_MAX_LENGTH)
    parent_checkpoint_id = models.CharField(
        _("parent checkpoint id"), max_length=SHORT_ID_MAX_LENGTH, null=True, blank=True
    )
    run_id = models.CharField(
        _("run id"), max_length=NAME_MAX_LENGTH, null=True, blank=True, help_text=_("From the metadata.")
    )
    type = models.CharField(_("serialization type"), max_length=TYPE_MAX_LENGTH)
    checkpoint = models.BinaryField(_("checkpoint"))
    encryption_key_id = models.CharField(
        _("encryption key id"), max_length=KEY_ID_LENGTH, null=True, blank=True, help_text=KEY_ID_HELP
    )
    value_mac = models.CharField(
        _("value MAC"), max_length=MAC_LENGTH, null=True, blank=True, help_text=MAC_HELP
    )
    metadata = models.JSONField(_("metadata"), default=dict)
    created_at = models.DateTimeField(_("created at"))

    objects = CheckpointQuerySet.as_manager()

    class Meta:
        verbose_name = _("LangGraph checkpoint")
        verbose_name_plural = _("LangGraph checkpoints")
        constraints = [
            models.UniqueConstraint(
                fields=["thread_id", "ns_hash", "checkpoint_id"], name="turnstate_lg_checkpoint_uniq"
            )
        ]
        indexes = [
            models.Index(fields=["run_id"], name="turnstate_lg_run_idx", condition=Q(run_id__isnull=False))
        ]

    def __str__(self) -> str:
        return f"{self.thread_id} / {self.checkpoint_ns or '(root)'} / {self.checkpoint_id}"


class LangGraphThread(Checkpoint):
    """A thread as operators see it: its root head checkpoint, when it changed, what waits."""

    pending_interrupts: int

    class Meta:
        proxy = True
        verbose_name = _("LangGraph thread")
        verbose_name_plural = _("LangGraph threads")


class ChannelBlob(models.Model):
    """One channel's value at one version, shared by every checkpoint that saw that version."""

    id = RowId(primary_key=True, serialize=False, verbose_name="ID")

    thread_id = models.CharField(_("thread id"), max_length=THREAD_ID_MAX_LENGTH)
    ns_hash = models.CharField(_("namespace hash"), max_length=HASH_LENGTH)
    channel = models.CharField(_("channel"), max_length=NAME_MAX_LENGTH)
    version = models.CharField(_("version"), max_length=SHORT_ID_MAX_LENGTH)
    type = models.CharField(_("serialization type"), max_length=TYPE_MAX_LENGTH)
    blob = models.BinaryField(_("value"), null=True)
    encryption_key_id = models.CharField(
        _("encryption key id"), max_length=KEY_ID_LENGTH, null=True, blank=True, help_text=KEY_ID_HELP
    )
    value_mac = models.CharField(
        _("value MAC"), max_length=MAC_LENGTH, null=True, blank=True, help_text=MAC_HELP
    )

    class Meta:
        verbose_name = _("LangGraph channel value")
        verbose_name_plural = _("LangGraph channel values")
        constraints = [
            models.UniqueConstraint(
                fields=["thread_id", "ns_hash", "channel", "version"], name="turnstate_lg_blob_uniq"
            )
        ]

    def __str__(self) -> str:
        return f"{self.thread_id} / {self.channel} @ {self.version}"


class CheckpointWrite(models.Model):
    """A pending write of one task against one checkpoint (``idx`` < 0: a special channel)."""

    id = RowId(primary_key=True, serialize=False, verbose_name="ID")

    thread_id = models.CharField(_("thread id"), max_length=THREAD_ID_MAX_LENGTH)
    ns_hash = models.CharField(_("namespace hash"), max_length=HASH_LENGTH)
    checkpoint_id = models.CharField(_("checkpoint id"), max_length=SHORT_ID_MAX_LENGTH)
    task_id = models.CharField(_("task id"), max_length=SHORT_ID_MAX_LENGTH)
    task_path = models.TextField(_("task path"), blank=True)
    idx = models.IntegerField(_("index"))
    channel = models.CharField(_("channel"), max_length=NAME_MAX_LENGTH)
    type = models.CharField(_("serialization type"), max_length=TYPE_MAX_LENGTH)
    blob = models.BinaryField(_("value"))
    encryption_key_id = models.CharField(
        _("encryption key id"), max_length=KEY_ID_LENGTH, null=True, blank=True, help_text=KEY_ID_HELP
    )
    value_mac = models.CharField(
        _("value MAC"), max_length=MAC_LENGTH, null=True, blank=True, help_text=MAC_HELP
    )

    class Meta:
        verbose_name = _("LangGraph pending write")
        verbose_name_plural = _("LangGraph pending writes")
        constraints = [
            models.UniqueConstraint(
                fields=["thread_id", "ns_hash", "checkpoint_id", "task_id", "idx"],
                name="turnstate_lg_write_uniq",
            )
        ]

    def __str__(self) -> str:
        return f"{self.thread_id} / {self.checkpoint_id} / {self.task_id} #{self.idx}"
