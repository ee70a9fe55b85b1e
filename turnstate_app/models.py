"""The rows a pause leaves behind. Thin models; queries live on their QuerySets."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

ID_MAX_LENGTH = 255


class CheckpointMetadataQuerySet(models.QuerySet["CheckpointMetadata"]):
    """Queries operators and the lifecycle share."""

    def for_thread(self, thread_id: str) -> CheckpointMetadataQuerySet:
        return self.filter(thread_id=thread_id)

    def at(self, thread_id: str, checkpoint_id: str, key: str) -> CheckpointMetadataQuerySet:
        return self.filter(thread_id=thread_id, checkpoint_id=checkpoint_id, key=key)


class CheckpointMetadata(models.Model):
    """One value stored under ``(thread_id, checkpoint_id, key)``.

    Requests (``ask_user_request:`` / ``interrupt_payload:``), turn states
    (``turn_state:``) and answers (``answer:``) all live here, told apart by key.
    Ids compare byte for byte on every database (see the vendor step in migration 0002).
    """

    thread_id = models.CharField(
        _("thread id"),
        max_length=ID_MAX_LENGTH,
        help_text=_("The agent thread the row belongs to."),
    )
    checkpoint_id = models.CharField(
        _("checkpoint id"),
        max_length=ID_MAX_LENGTH,
        help_text=_("The checkpoint within the thread at which the run paused."),
    )
    key = models.CharField(
        _("key"),
        max_length=ID_MAX_LENGTH,
        help_text=_("What the row holds, e.g. ask_user_request:<tool_call_id> or turn_state:<jti>."),
    )
    value = models.TextField(_("value"), help_text=_("The stored text, usually JSON."))
    task_id = models.CharField(
        _("task id"),
        max_length=ID_MAX_LENGTH,
        null=True,
        blank=True,
        help_text=_("The run that wrote the row, when known."),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    objects = CheckpointMetadataQuerySet.as_manager()

    class Meta:
        verbose_name = _("checkpoint metadata row")
        verbose_name_plural = _("checkpoint metadata rows")
        constraints = [
            models.UniqueConstraint(
                fields=["thread_id", "checkpoint_id", "key"],
                name="turnstate_checkpoint_key_uniq",
            )
        ]

    def __str__(self) -> str:
        return f"{self.thread_id} / {self.checkpoint_id} / {self.key}"
