"""The rows a pause leaves behind. Thin models: queries and state changes live in
:mod:`turnstate_app.managers`, vocabularies in :mod:`turnstate_app.choices`."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Case, Q, Value, When
from django.db.models.functions import Left
from django.db.models.lookups import Exact
from django.utils.translation import gettext_lazy as _

from turnstate_app.after_answer import failed_continuation_q
from turnstate_app.choices import ContinuationState, PauseStatus, RowKind
from turnstate_app.contracts import PauseClaims
from turnstate_app.encryption import KEY_ID_LENGTH
from turnstate_app.integrity import MAC_LENGTH
from turnstate_app.keys import (
    ANSWER_KEY_PREFIX,
    ASK_USER_REQUEST_KEY_PREFIX,
    INTERRUPT_PAYLOAD_KEY_PREFIX,
    TURN_STATE_KEY_PREFIX,
)
from turnstate_app.managers import (
    UNRESUMABLE_NO_LEDGER,
    UNRESUMABLE_NO_TURN_STATE,
    CheckpointMetadataQuerySet,
    PauseQuerySet,
    UnresumablePauseManager,
    claims_of,
)
from turnstate_app.ports.limits import ID_MAX_LENGTH
from turnstate_app.ports.sealing import read_row

__all__ = [
    "ID_MAX_LENGTH",
    "UNRESUMABLE_NO_LEDGER",
    "UNRESUMABLE_NO_TURN_STATE",
    "CheckpointMetadata",
    "CheckpointMetadataQuerySet",
    "ContinuationState",
    "Pause",
    "PauseQuerySet",
    "PauseStatus",
    "RowKind",
    "UnresumablePause",
]


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
        # Translators: "ask_user_request:<tool_call_id>" and "turn_state:<jti>" are keys as stored, not
        # HTML: keep them as they are. The admin escapes help texts, so the brackets show.
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
    encryption_key_id = models.CharField(
        _("encryption key id"),
        max_length=KEY_ID_LENGTH,
        null=True,
        blank=True,
        help_text=_("The id of the key the value is encrypted with; empty when it is stored clear."),
    )
    value_mac = models.CharField(
        _("value MAC"),
        max_length=MAC_LENGTH,
        null=True,
        blank=True,
        help_text=_(
            "Binds the stored value to this row and its key id, keyed from SECRET_KEY: a value "
            "changed at rest no longer matches it and is not read."
        ),
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
        indexes = [
            models.Index(fields=["kind", "created_at"], name="turnstate_ckpt_kind_idx"),
            # The order of GET checkpoints/ (cursor pages by created_at, then id): read in order,
            # never a sort of the whole store.
            models.Index(fields=["created_at", "id"], name="turnstate_ckpt_created_idx"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["thread_id", "checkpoint_id", "key"],
                name="turnstate_checkpoint_key_uniq",
            )
        ]

    def __str__(self) -> str:
        return f"{self.thread_id} / {self.checkpoint_id} / {self.key}"

    @classmethod
    def ledger_model(cls) -> type[Pause]:
        """The ledger, for this table's queries that read it (the unresumable requests)."""
        return Pause

    def plain_value(self) -> str:
        """The value as written, decrypted when stored encrypted.

        ``UnreadableValueError`` when its MAC does not verify (it was changed at rest) or its
        key is not configured (any more)."""
        return read_row(
            self.thread_id, self.checkpoint_id, self.key, self.value, self.encryption_key_id, self.value_mac
        )


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
    answer_schema = models.JSONField(
        _("answer schema"),
        null=True,
        blank=True,
        help_text=_("The JSON Schema an answer must conform to; empty: any JSON answer."),
    )
    group = models.CharField(
        _("group"),
        max_length=ID_MAX_LENGTH,
        null=True,
        blank=True,
        help_text=_("Pauses of one group are answered one by one; their run continues once, after the last."),
    )
    agent = models.CharField(
        _("agent"),
        max_length=ID_MAX_LENGTH,
        null=True,
        blank=True,
        help_text=_(
            "The name of the graph or agent that paused; only it may continue the run. "
            "Empty: none recorded, any may."
        ),
    )
    continuation = models.CharField(
        _("continuation"),
        max_length=16,
        choices=ContinuationState.choices,
        null=True,
        blank=True,
        help_text=_(
            "Where the run's continuation from this answer stands (queued, running, continued, failed, "
            "crashed, refused); empty while the pause is not answered."
        ),
    )
    continuation_since = models.DateTimeField(
        _("continuation since"),
        null=True,
        blank=True,
        help_text=_("When the continuation entered its state (for running: when it was claimed)."),
    )
    continuation_reason = models.TextField(
        _("continuation reason"),
        null=True,
        blank=True,
        help_text=_("Why the continuation failed, crashed or was refused; empty otherwise."),
    )
    continuation_attempts = models.PositiveSmallIntegerField(
        _("continuation attempts"),
        default=0,
        help_text=_("How many times the continuation was tried (claimed, or failed before running)."),
    )
    continuation_retry_at = models.DateTimeField(
        _("next try"),
        null=True,
        blank=True,
        help_text=_(
            "When a failed continuation is tried again; empty: not by itself (CONTINUATION_ATTEMPTS "
            "spent, or not failed)."
        ),
    )
    answer_traceparent = models.CharField(
        _("answer's trace"),
        max_length=64,
        null=True,
        blank=True,
        help_text=_(
            "The trace context (W3C traceparent) the answer was given in, which the continuation's "
            "span links to; empty: no tracing."
        ),
    )
    unresumable_reason = models.TextField(
        _("unresumable reason"),
        null=True,
        blank=True,
        help_text=_(
            "Why the run can no longer be continued though the pause is pending (its checkpoints "
            "were deleted); empty: nothing known against it."
        ),
    )

    shown_digest = models.CharField(
        _("shown digest"),
        max_length=64,
        null=True,
        blank=True,
        help_text=_(
            "MAC (keyed from SECRET_KEY) of the SHA-256 of what the person was shown and of the pause's "
            "identity; the run continues only while the stored state still asks exactly that. Empty: "
            "nothing to confirm the question with, so a continuation that checks it is refused."
        ),
    )
    answer_mac = models.CharField(
        _("answer MAC"),
        max_length=64,
        null=True,
        blank=True,
        help_text=_(
            "MAC (keyed from SECRET_KEY) of the answer as stored and of the pause's identity, written "
            "as the answer is given; an answer read back that does not match it is refused. Empty: "
            "not answered."
        ),
    )

    objects = PauseQuerySet.as_manager()

    class Meta:
        verbose_name = _("pause")
        verbose_name_plural = _("pauses")
        indexes = [
            models.Index(fields=["status", "created_at"], name="turnstate_pause_status_idx"),
            # The order of every list of pauses (REST's cursor pages, staff's whole ledger): a page,
            # first or deep, reads its rows in order, never the whole ledger sorted.
            models.Index(fields=["created_at", "id"], name="turnstate_pause_created_idx"),
            # ... and of those whose turn state was not recorded at pause (GET pauses/?resumable=false,
            # the admin's "recorded at pause: no"): a few, found without reading the rest
            # (PostgreSQL and SQLite; MySQL has no partial index).
            models.Index(
                fields=["created_at", "id"], condition=Q(resumable=False), name="turnstate_pause_notrec_idx"
            ),
            # Pending and answerable (or past their age): the pending figure, the oldest pending
            # one and the unresumable ones read this range, not every pending row ever kept.
            models.Index(fields=["status", "expires_at"], name="turnstate_pause_expiry_idx"),
            # Grouped members not answered: where a pending group, and one failed by a member's
            # expiry, show, without reading the pauses of no group nor the answered members
            # (PostgreSQL and SQLite; MySQL has no partial index).
            models.Index(
                fields=["status", "expires_at"],
                condition=Q(group__isnull=False, status__in=[PauseStatus.PENDING, PauseStatus.EXPIRED]),
                name="turnstate_pause_group_due_idx",
            ),
            # Grouped members that may show a failed group (a continuation failed, crashed or
            # refused; an expiry, marked or due): the failed groups' figure and list read these
            # few, read whole, whatever the width of the rows around them; the group index alone,
            # as cheap by the planner's estimate, would read every grouped pause ever kept.
            models.Index(
                fields=["group"],
                condition=Q(group__isnull=False)
                & (failed_continuation_q() | Q(status__in=[PauseStatus.PENDING, PauseStatus.EXPIRED])),
                name="turnstate_pause_group_fail_idx",
            ),
            # What operators count (turnstate_status): answers still to hand off or to continue,
            # found among the answered pauses without reading the ones long done.
            models.Index(fields=["continuation", "handed_off_at"], name="turnstate_pause_handoff_idx"),
            # ... and, by when they entered their state, the running (stalled) and failed ones.
            models.Index(fields=["continuation", "continuation_since"], name="turnstate_pause_contin_idx"),
            models.Index(fields=["thread_id"], name="turnstate_pause_thread_idx"),
            models.Index(fields=["run_id"], name="turnstate_pause_run_idx"),  # the admin's search
            # GET pauses/?session_id=: a session's pauses, not every pause read and filtered.
            models.Index(fields=["session_id"], name="turnstate_pause_session_idx"),
            models.Index(fields=["group", "created_at"], name="turnstate_pause_group_idx"),
            models.Index(
                fields=["thread_id", "checkpoint_id", "request_key"], name="turnstate_pause_request_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"pause {self.jti} ({self.status})"

    @classmethod
    def store_model(cls) -> type[CheckpointMetadata]:
        """The store, for the ledger's queries that read it (a pause's turn state)."""
        return CheckpointMetadata

    @property
    def claims(self) -> PauseClaims:
        """The claims this pause's token carries, rebuilt from the ledger."""
        return claims_of(self)


class UnresumablePause(CheckpointMetadata):
    """The request rows of pauses that cannot be continued: the operators' page."""

    objects = UnresumablePauseManager()  # type: ignore[assignment,misc]

    # Annotated by the manager's query: the stranded pause (None: no ledger row), the reason its
    # ledger row stores (None: none stored), and why.
    jti: str | None
    has_ledger: bool
    stored_reason: str | None
    reason: str

    class Meta:
        proxy = True
        verbose_name = _("unresumable pause")
        verbose_name_plural = _("unresumable pauses")
