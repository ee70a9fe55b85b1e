"""The rows a pause leaves behind. Thin models; queries live on their QuerySets."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import models
from django.db.models import Case, Exists, OuterRef, Q, Subquery, Value, When
from django.db.models.functions import Concat, Left
from django.db.models.lookups import Exact
from django.utils.translation import gettext_lazy as _

from turnstate_app.checkpoints import (
    ANSWER_KEY_PREFIX,
    ASK_USER_REQUEST_KEY_PREFIX,
    INTERRUPT_PAYLOAD_KEY_PREFIX,
)
from turnstate_app.contracts import PauseClaims
from turnstate_app.turnstate import TURN_STATE_KEY_PREFIX

if TYPE_CHECKING:
    from turnstate_app.retention import PurgeBatch, PurgeResult

ID_MAX_LENGTH = 255


class RowKind(models.TextChoices):
    """What a metadata row holds, computed by the database from its key."""

    REQUEST = "request", _("request")
    TURN_STATE = "turn_state", _("turn state")
    ANSWER = "answer", _("answer")
    OTHER = "other", _("other")


def _prefix_is(prefix: str) -> Exact:
    return Exact(Left("key", len(prefix)), Value(prefix))


# A comparison of a fixed-length prefix, not LIKE: case-sensitive on every database
# and allowed in a generated column everywhere.
ROW_KIND_EXPRESSION = Case(
    When(_prefix_is(ASK_USER_REQUEST_KEY_PREFIX), then=Value(RowKind.REQUEST.value)),
    When(_prefix_is(INTERRUPT_PAYLOAD_KEY_PREFIX), then=Value(RowKind.REQUEST.value)),
    When(_prefix_is(TURN_STATE_KEY_PREFIX), then=Value(RowKind.TURN_STATE.value)),
    When(_prefix_is(ANSWER_KEY_PREFIX), then=Value(RowKind.ANSWER.value)),
    default=Value(RowKind.OTHER.value),
)

UNRESUMABLE_NO_LEDGER = (
    "no ledger row: written by an older build or an interrupted mint; the question can be "
    "answered elsewhere, the run cannot be continued from this store"
)
UNRESUMABLE_NO_TURN_STATE = (
    "turn state not recorded (the record failed at mint, or the row was removed): the "
    "question can be answered, the run cannot be continued from this store"
)


class CheckpointMetadataQuerySet(models.QuerySet["CheckpointMetadata"]):
    """Queries operators and the lifecycle share."""

    def for_thread(self, thread_id: str) -> CheckpointMetadataQuerySet:
        return self.filter(thread_id=thread_id)

    def at(self, thread_id: str, checkpoint_id: str, key: str) -> CheckpointMetadataQuerySet:
        return self.filter(thread_id=thread_id, checkpoint_id=checkpoint_id, key=key)

    def requests(self) -> CheckpointMetadataQuerySet:
        """Request rows (``ask_user_request:`` / ``interrupt_payload:``), found by index."""
        return self.filter(kind=RowKind.REQUEST)

    def unresumable(self) -> CheckpointMetadataQuerySet:
        """Request rows this store cannot continue, with ``jti`` (or None) and ``reason``.

        Two kinds: a pending ledger pause whose turn-state row is absent, and a request
        row that no ledger pause owns. One query, whatever the number of rows: each
        request row is probed through the ledger's and the store's own indexes.
        """
        owners = Pause.objects.filter(
            thread_id=OuterRef("thread_id"),
            checkpoint_id=OuterRef("checkpoint_id"),
            request_key=OuterRef("key"),
        )
        turn_states = CheckpointMetadata.objects.filter(
            thread_id=OuterRef("thread_id"),
            checkpoint_id=OuterRef("checkpoint_id"),
            key=Concat(Value(TURN_STATE_KEY_PREFIX), OuterRef("jti")),
        )
        stranded = owners.filter(status=PauseStatus.PENDING).exclude(Exists(turn_states))
        return (
            self.requests()
            .annotate(
                jti=Subquery(stranded.order_by("-created_at").values("jti")[:1]),
                has_ledger=Exists(owners),
            )
            .filter(Q(jti__isnull=False) | Q(has_ledger=False))
            .annotate(
                reason=Case(
                    When(has_ledger=False, then=Value(UNRESUMABLE_NO_LEDGER)),
                    default=Value(UNRESUMABLE_NO_TURN_STATE),
                )
            )
        )


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
    kind = models.GeneratedField(
        expression=ROW_KIND_EXPRESSION,
        output_field=models.CharField(max_length=16, choices=RowKind.choices),
        db_persist=True,
        verbose_name=_("kind"),
        help_text=_("What the row holds, computed by the database from its key."),
    )

    objects = CheckpointMetadataQuerySet.as_manager()

    class Meta:
        verbose_name = _("checkpoint metadata row")
        verbose_name_plural = _("checkpoint metadata rows")
        indexes = [models.Index(fields=["kind", "created_at"], name="turnstate_ckpt_kind_idx")]
        constraints = [
            models.UniqueConstraint(
                fields=["thread_id", "checkpoint_id", "key"],
                name="turnstate_checkpoint_key_uniq",
            )
        ]

    def __str__(self) -> str:
        return f"{self.thread_id} / {self.checkpoint_id} / {self.key}"


class PauseStatus(models.TextChoices):
    PENDING = "pending", _("pending")
    ANSWERED = "answered", _("answered")
    EXPIRED = "expired", _("expired")


class PauseQuerySet(models.QuerySet["Pause"]):
    """The filters views, admin and commands share, so none of them hand-writes one."""

    def pending(self) -> PauseQuerySet:
        return self.filter(status=PauseStatus.PENDING)

    def answered(self) -> PauseQuerySet:
        return self.filter(status=PauseStatus.ANSWERED)

    def expired(self, now: datetime) -> PauseQuerySet:
        """Marked expired, or still pending past their age at ``now``."""
        return self.filter(Q(status=PauseStatus.EXPIRED) | Q(status=PauseStatus.PENDING, expires_at__lte=now))

    def for_user(self, user: Any) -> PauseQuerySet:
        """What ``user`` may see: staff everything, others their own pauses only."""
        if not getattr(user, "is_authenticated", False):
            return self.none()
        if user.is_staff:
            return self
        return self.filter(owner=user)

    def for_thread(self, thread_id: str) -> PauseQuerySet:
        return self.filter(thread_id=thread_id)

    def awaiting_handoff(self) -> PauseQuerySet:
        """Answered pauses whose hand-off to RESUME_HANDLER never succeeded."""
        return self.filter(status=PauseStatus.ANSWERED, handed_off_at__isnull=True)

    def settled(self) -> PauseQuerySet:
        """Answered or expired: no token of theirs can be consumed any more."""
        return self.filter(status__in=[PauseStatus.ANSWERED, PauseStatus.EXPIRED])

    def last_event_before(self, cutoff: datetime) -> PauseQuerySet:
        """Whose last event (``answered_at``, else ``expires_at``) came before ``cutoff``."""
        return self.filter(Q(answered_at__lt=cutoff) | Q(answered_at__isnull=True, expires_at__lt=cutoff))

    def purgeable(self, cutoff: datetime, *, include_pending: bool = False) -> PauseQuerySet:
        """What retention removes: settled pauses (any, with ``include_pending``) quiet since ``cutoff``."""
        old = self.last_event_before(cutoff)
        return old if include_pending else old.settled()

    def purge(
        self,
        *,
        batch_size: int = 1000,
        dry_run: bool = False,
        progress: Callable[[PurgeBatch], None] | None = None,
    ) -> PurgeResult:
        """Delete these pauses and their rows in bounded batches (see :mod:`turnstate_app.retention`)."""
        from turnstate_app.retention import purge_pauses

        return purge_pauses(self, batch_size=batch_size, dry_run=dry_run, progress=progress)


class Pause(models.Model):
    """The ledger: one row per minted token, and the one place a token is consumed.

    ``resumable`` is what recording the turn state reported at mint, never a promise.
    """

    jti = models.CharField(_("token id"), max_length=64, unique=True)
    run_id = models.CharField(_("run id"), max_length=ID_MAX_LENGTH)
    session_id = models.CharField(_("session id"), max_length=ID_MAX_LENGTH)
    thread_id = models.CharField(_("thread id"), max_length=ID_MAX_LENGTH)
    checkpoint_id = models.CharField(_("checkpoint id"), max_length=ID_MAX_LENGTH)
    scope_hash = models.CharField(_("scope hash"), max_length=ID_MAX_LENGTH)
    tool_call_id = models.CharField(_("tool call id"), max_length=ID_MAX_LENGTH, null=True, blank=True)
    interrupt_id = models.CharField(_("interrupt id"), max_length=ID_MAX_LENGTH, null=True, blank=True)
    name = models.CharField(_("name"), max_length=ID_MAX_LENGTH, null=True, blank=True)
    request_key = models.CharField(
        _("request key"), max_length=ID_MAX_LENGTH, help_text=_("Where the request is stored.")
    )
    resumable = models.BooleanField(
        _("resumable"), help_text=_("Whether the turn state was recorded when the pause was minted.")
    )
    status = models.CharField(
        _("status"), max_length=16, choices=PauseStatus.choices, default=PauseStatus.PENDING
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="turnstate_pauses",
        verbose_name=_("owner"),
        help_text=_("Who may answer; empty: anyone holding the token."),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    answered_at = models.DateTimeField(_("answered at"), null=True, blank=True)
    expires_at = models.DateTimeField(_("expires at"))
    handed_off_at = models.DateTimeField(
        _("handed off at"),
        null=True,
        blank=True,
        help_text=_("When RESUME_HANDLER accepted the answer; empty: never (yet)."),
    )

    objects = PauseQuerySet.as_manager()

    class Meta:
        verbose_name = _("pause")
        verbose_name_plural = _("pauses")
        indexes = [
            models.Index(fields=["status", "created_at"], name="turnstate_pause_status_idx"),
            models.Index(fields=["thread_id"], name="turnstate_pause_thread_idx"),
            models.Index(
                fields=["thread_id", "checkpoint_id", "request_key"], name="turnstate_pause_request_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"pause {self.jti} ({self.status})"

    @property
    def claims(self) -> PauseClaims:
        """The claims this pause's token carries, rebuilt from the ledger."""
        return PauseClaims(
            jti=self.jti,
            run_id=self.run_id,
            session_id=self.session_id,
            thread_id=self.thread_id,
            checkpoint_id=self.checkpoint_id,
            scope_hash=self.scope_hash,
            tool_call_id=self.tool_call_id,
            interrupt_id=self.interrupt_id,
            name=self.name,
        )


class UnresumablePauseManager(models.Manager["UnresumablePause"]):
    def get_queryset(self) -> CheckpointMetadataQuerySet:  # type: ignore[override]
        return CheckpointMetadataQuerySet(self.model, using=self._db).unresumable()


class UnresumablePause(CheckpointMetadata):
    """The request rows of pauses that cannot be continued: the operators' page."""

    objects = UnresumablePauseManager()  # type: ignore[assignment,misc]

    # Annotated by the manager's query: the stranded pause (None: no ledger row) and why.
    jti: str | None
    has_ledger: bool
    reason: str

    class Meta:
        proxy = True
        verbose_name = _("unresumable pause")
        verbose_name_plural = _("unresumable pauses")
