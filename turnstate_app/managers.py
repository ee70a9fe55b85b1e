"""The queries and state changes of the two tables, in one place.

Views, admin, commands and the lifecycle call these; none of them writes a filter on a
pause's status or age, or an UPDATE of the ledger, of its own. Models import this module,
never the reverse (the model classes are named here for type checkers only): a query that
reads the other table asks its own model for it (``Pause.store_model()``,
``CheckpointMetadata.ledger_model()``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from datetime import datetime, timedelta
from functools import cache
from typing import TYPE_CHECKING, Any

from django.db import models
from django.db.models import Case, Count, Exists, F, OuterRef, Q, Subquery, Value, When
from django.db.models.functions import Concat
from django.db.models.lookups import Exact, IsNull
from django.utils import timezone

from turnstate_app.after_answer import (
    AfterAnswerQuerySet,
    answered_values,
    failed_continuation_q,
    handed_off_unclaimed_q,
    stalled_q,
)
from turnstate_app.choices import ContinuationState, PauseStatus, RowKind
from turnstate_app.conf import conf
from turnstate_app.contracts import PauseClaims
from turnstate_app.keys import TURN_STATE_KEY_PREFIX

if TYPE_CHECKING:  # the QuerySets' type arguments; models import this module at run time
    from turnstate_app.models import CheckpointMetadata, Pause, UnresumablePause  # noqa: F401

CLAIM_FIELDS: tuple[str, ...] = tuple(PauseClaims.model_fields)
"""A pause's identity: the fields its token carries, stored on its ledger row under the same names."""

EFFECTIVE_STATUS = "effective_status"
"""The annotation :meth:`PauseQuerySet.with_effective_status` adds."""

RESUMABLE_NOW = "resumable_now"
"""The attribute the admin sets from :meth:`PauseQuerySet.resumable_now_among`."""

UNRESUMABLE_NO_LEDGER = (
    "no ledger row: written by an older build or an interrupted mint; the question can be "
    "answered elsewhere, the run cannot be continued from this store"
)
UNRESUMABLE_NO_TURN_STATE = (
    "turn state not recorded (the record failed at mint, or the row was removed): the "
    "question can be answered, the run cannot be continued from this store"
)


GROUP_STATE = "group_state"
"""The annotation :meth:`PauseQuerySet.with_group_state` adds."""

GROUP_STATES = ("pending", "complete", "continued", "stalled", "failed")
"""Where a pause group stands. ``failed``: a member expired unanswered, or the continuation
failed, crashed or was refused; ``continued``: the run continued and returned; ``stalled``:
the continuation was claimed more than ``STALLED_AFTER`` ago and never finished; ``pending``: a
member still awaits its answer; ``complete``: every member is answered, not continued yet."""


GROUPS_KEPT_IN = ("continued", "failed")
"""The group states a group stays in until it is purged (or erased), so their members grow with
history; the others last about ``TOKEN_MAX_AGE`` or ``STALLED_AFTER``."""

GROUP_WALK_FROM = 1000
"""Members showing a state of :data:`GROUPS_KEPT_IN` (:func:`group_sign_q`) from which a list of
that state walks the ledger newest first rather than gathering its groups
(:meth:`PauseQuerySet.in_group_state`)."""


def group_ladder(now: datetime) -> list[tuple[str, Q]]:
    """The group states but ``complete``, in the order that decides ties, each with the condition
    one member meets for it: the first state some member meets is the group's, and a group whose
    members meet none of them is ``complete``."""
    return [
        ("continued", Q(continuation=ContinuationState.CONTINUED)),
        ("failed", failed_continuation_q() | effective_status_q(PauseStatus.EXPIRED, now)),
        ("stalled", stalled_q(now)),
        ("pending", effective_status_q(PauseStatus.PENDING, now)),
    ]


def group_state_of(model: type[Pause], now: datetime) -> Subquery:
    """The state of the outer row's group at ``now``: one aggregate over its members, read through
    the group index (a group has a handful of members), never a scan of the ledger."""
    ladder = group_ladder(now)
    seen = {f"_{name}": Count("pk", filter=condition) for name, condition in ladder}
    state = Case(
        *(When(**{f"_{name}__gt": 0}, then=Value(name)) for name, _ in ladder),
        default=Value("complete"),
        output_field=models.CharField(),
    )
    members = (
        model.objects.filter(group=OuterRef("group"))
        .order_by()
        .values("group")
        .annotate(**seen)
        .annotate(state=state)
        .values("state")
    )
    return Subquery(members, output_field=models.CharField())


def group_state_case(model: type[Pause], now: datetime) -> Case:
    """The state of the row's group at ``now`` (:func:`group_state_of`), None for a pause without a
    group, which reads nothing more."""
    return Case(
        When(group__isnull=True, then=Value(None)),
        default=group_state_of(model, now),
        output_field=models.CharField(),
    )


def group_sign_q(state: str, now: datetime) -> Q:
    """A condition at least one member of every group in ``state`` meets on its own row, each served
    by an index: a group in a state is found through these members, so a list or a figure of one
    state reads about the rows it shows, not every grouped pause ever kept."""
    signs = dict(group_ladder(now))
    signs["complete"] = Q(continuation__in=(ContinuationState.QUEUED, ContinuationState.RUNNING))
    if state not in signs:
        raise ValueError(f"unknown group state {state!r}")
    return Q(group__isnull=False) & signs[state]


class CheckpointMetadataQuerySet(models.QuerySet["CheckpointMetadata"]):
    """Queries operators and the lifecycle share."""

    def for_thread(self, thread_id: str) -> CheckpointMetadataQuerySet:
        return self.filter(thread_id=thread_id)

    def at(self, thread_id: str, checkpoint_id: str, key: str) -> CheckpointMetadataQuerySet:
        return self.filter(thread_id=thread_id, checkpoint_id=checkpoint_id, key=key)

    def requests(self) -> CheckpointMetadataQuerySet:
        """Request rows (``ask_user_request:`` / ``interrupt_payload:``), found by index."""
        return self.filter(kind=RowKind.REQUEST)

    def unresumable(
        self, now: datetime | None = None, reason: str | None = None
    ) -> CheckpointMetadataQuerySet:
        """Request rows this store cannot continue, with ``jti`` (or None) and ``reason``.

        Three kinds: a ledger pause still answerable at ``now`` (pending, within its age)
        whose turn-state row is absent, or whose ledger row says why it cannot be continued
        (``unresumable_reason``: its checkpoints were deleted; that reason is the row's, and
        ``stored_reason`` holds it), and a request row that no ledger pause owns. An
        expired pause is not listed: its question can no longer be answered. ``reason`` (one of
        :data:`UNRESUMABLE_KINDS`) keeps one kind, chosen before any row is probed.

        The same holds for a request row no pause owns: a pause is answerable for
        ``TOKEN_MAX_AGE`` from its mint, which writes the request row before it signs the token,
        so such a row is listed while it is younger than that (:func:`asked_since`). A pause the
        ledger still holds answerable is listed whatever the age of its request row. That row is
        almost always as young (a mint fixes ``expires_at`` before it writes the request row, so
        ``expires_at - TOKEN_MAX_AGE`` is at most the row's ``created_at``), but not always: a
        retried call rewrites the request row of an earlier pause (same thread, checkpoint and
        tool call) and keeps its ``created_at``, and a lowered ``TOKEN_MAX_AGE`` shortens no
        ``expires_at`` already fixed. So the rows read start at the older of the window and the
        oldest request row of a stranded pause (:func:`oldest_stranded_ask`).

        Two queries, whatever the number of rows: that bound (asked here, when the QuerySet is
        made, from the answerable pauses, as the ``unresumable`` figure reads them), then the
        rows, read through the (kind, created_at) index from the bound on. The stranded pauses'
        request rows are one set, found once from the answerable pauses (:func:`stranded_asks`),
        so a row of the window costs a look into that set and one probe of the ledger's request
        index (whether a pause owns it); the owner's ``jti`` and reason are read for the rows
        listed only. The bound is a value in the statement, not a subquery, so every database
        reads only that range of the index: the cost follows the request rows of the last
        ``TOKEN_MAX_AGE`` and the answerable pauses, never the history the store holds. A list
        of one stranded kind starts from its pauses and reads no other row.
        """
        now = timezone.now() if now is None else now
        ledger = self.model.ledger_model()
        store = ledger.store_model()
        owners = ledger.objects.filter(
            thread_id=OuterRef("thread_id"),
            checkpoint_id=OuterRef("checkpoint_id"),
            request_key=OuterRef("key"),
        )
        stranded = owners.filter(stranded_q(now, store)).order_by("-created_at", "-pk")
        asks = stranded_asks(now, ledger.objects.using(self.db), store)
        window = asked_since(now)
        oldest = oldest_stranded_ask(now, ledger.objects.using(self.db), store)
        unowned = Q(has_ledger=False, created_at__gte=window)
        listed = {
            None: Q(pk__in=asks.values("asked_row")) | unowned,
            UNRESUMABLE_KINDS[0]: unowned,
            UNRESUMABLE_KINDS[1]: Q(pk__in=asks.filter(unresumable_reason__isnull=True).values("asked_row")),
            UNRESUMABLE_KINDS[2]: Q(pk__in=asks.filter(unresumable_reason__isnull=False).values("asked_row")),
        }
        if reason not in listed:
            raise ValueError(f"unknown unresumable kind {reason!r}")
        rows = (
            self.requests()
            .filter(created_at__gte=window if oldest is None else min(window, oldest))
            .annotate(
                # A scalar probe, not EXISTS: a database may run an EXISTS under OR as one hash
                # of the whole ledger, which is history. The request index holds what it returns.
                has_ledger=IsNull(Subquery(owners.order_by().values("thread_id")[:1]), False),
            )
            .filter(listed[reason])
            .annotate(
                jti=Subquery(stranded.values("jti")[:1]),
                stored_reason=Subquery(stranded.values("unresumable_reason")[:1]),
            )
            .annotate(
                reason=Case(
                    When(has_ledger=False, then=Value(UNRESUMABLE_NO_LEDGER)),
                    When(stored_reason__isnull=False, then=F("stored_reason")),
                    default=Value(UNRESUMABLE_NO_TURN_STATE),
                    output_field=models.TextField(),
                )
            )
        )
        if reason == UNRESUMABLE_KINDS[1]:  # a row's reason is its newest stranded pause's
            return rows.filter(stored_reason__isnull=True)
        if reason == UNRESUMABLE_KINDS[2]:
            return rows.filter(stored_reason__isnull=False)
        return rows


UNRESUMABLE_KINDS = ("no_ledger", "no_turn_state", "stored")
"""The kinds :meth:`CheckpointMetadataQuerySet.unresumable` lists, by reason: no ledger pause owns
the request row; the pause's turn state is absent; the pause's ledger row stores why."""

ASKED_MARGIN = timedelta(minutes=5)
"""Beyond ``TOKEN_MAX_AGE``, how long a request row no pause owns stays listed: its token is signed
after the row is written (a mint's other writes come between), and the clocks of the process that
wrote it and of the one listing may differ by a little."""


def asked_since(now: datetime) -> datetime:
    """The oldest ``created_at`` of a request row no pause owns that a token could still answer at
    ``now``: ``TOKEN_MAX_AGE`` (and :data:`ASKED_MARGIN`) ago."""
    return now - timedelta(seconds=conf.TOKEN_MAX_AGE) - ASKED_MARGIN


def stranded_asks(
    now: datetime, pauses: models.QuerySet[Pause, Any], store: type[CheckpointMetadata]
) -> models.QuerySet[Any, Any]:
    """The stranded pauses (:func:`stranded_q`) whose request row the store holds, with that row's
    primary key (``asked_row``) and ``created_at`` (``asked``): the answerable pauses through the
    ledger's status index, each probing the store's unique index, as the ``unresumable`` figure
    reads them."""
    asked = store.objects.filter(
        thread_id=OuterRef("thread_id"),
        checkpoint_id=OuterRef("checkpoint_id"),
        key=OuterRef("request_key"),
    )
    return (
        pauses.filter(stranded_q(now, store))
        .annotate(asked_row=Subquery(asked.values("pk")[:1]), asked=Subquery(asked.values("created_at")[:1]))
        .filter(asked_row__isnull=False)
    )


def oldest_stranded_ask(
    now: datetime, pauses: models.QuerySet[Pause, Any], store: type[CheckpointMetadata]
) -> datetime | None:
    """The ``created_at`` of the oldest request row a stranded pause (:func:`stranded_q`) owns, or
    None: one query (:func:`stranded_asks`)."""
    oldest: datetime | None = (
        stranded_asks(now, pauses, store).order_by("asked").values_list("asked", flat=True).first()
    )
    return oldest


def stranded_q(now: datetime, store: type[CheckpointMetadata]) -> Q:
    """Pauses still answerable at ``now`` whose run this store cannot continue: the turn-state
    row is absent (the record failed at mint, or the row went later), or the ledger row says why
    (``unresumable_reason``). Found through the status index, each probing the store's unique index."""
    turn_states = store.objects.filter(
        thread_id=OuterRef("thread_id"),
        checkpoint_id=OuterRef("checkpoint_id"),
        key=Concat(Value(TURN_STATE_KEY_PREFIX), OuterRef("jti")),
    )
    return effective_status_q(PauseStatus.PENDING, now) & (
        Q(unresumable_reason__isnull=False) | ~Q(Exists(turn_states))
    )


def resumable_now_q(now: datetime, store: type[CheckpointMetadata]) -> Q:
    """Pauses an answer at ``now`` would be taken for and whose run this store can continue:
    answerable, and not :func:`stranded_q` (the unresumable list's rule). ``resumable`` only
    says whether the turn state was recorded at mint; a turn state lost since, an expiry or an
    answer changes this, not that."""
    return effective_status_q(PauseStatus.PENDING, now) & ~stranded_q(now, store)


def unfinished_group_q(ledger: type[Pause]) -> Q:
    """Members of a group that is not done: a member still pending, or the run not continued.

    Retention keeps such a group whole: its continuation needs every member's answer and the
    claim on its lead's rows. A group that failed stays too, until an operator erases it
    (``--include-pending`` or ``--thread``).
    """

    def members(condition: Q) -> Exists:
        return Exists(ledger.objects.filter(condition, group=OuterRef("group")))

    return Q(group__isnull=False) & (
        Q(members(Q(status=PauseStatus.PENDING))) | ~Q(members(Q(continuation=ContinuationState.CONTINUED)))
    )


def _past_age(now: datetime) -> Q:
    """The one definition of "too old to answer": a pause's age ends at ``expires_at``."""
    return Q(expires_at__lte=now)


def effective_status_q(status: str, now: datetime) -> Q:
    """Pauses whose status, as an answer at ``now`` would meet it, is ``status``.

    The ledger marks a pending pause ``expired`` only when someone next tries to answer
    it (or ``expire`` runs), so "pending" alone does not mean answerable.
    """
    if status == PauseStatus.PENDING:
        return Q(status=PauseStatus.PENDING) & ~_past_age(now)
    if status == PauseStatus.EXPIRED:
        return Q(status=PauseStatus.EXPIRED) | (Q(status=PauseStatus.PENDING) & _past_age(now))
    if status == PauseStatus.ANSWERED:
        return Q(status=PauseStatus.ANSWERED)
    raise ValueError(f"unknown pause status {status!r}")


class PauseQuerySet(AfterAnswerQuerySet, models.QuerySet["Pause"]):
    """The ledger's filters and its state changes, so no caller hand-writes one; the life after
    the answer is :class:`~turnstate_app.after_answer.AfterAnswerQuerySet`'s."""

    # -- construction --------------------------------------------------------------

    def build(self, claims: PauseClaims, **fields: Any) -> Pause:
        """An unsaved ledger row for ``claims``: the identity comes from the claims, only from them."""
        return new_pause(self.model, claims, **fields)

    # -- status --------------------------------------------------------------------

    def with_effective_status(self, now: datetime) -> PauseQuerySet:
        """Annotate ``effective_status``: the status an answer at ``now`` would meet."""
        return self.annotate(
            **{
                EFFECTIVE_STATUS: Case(
                    When(effective_status_q(PauseStatus.EXPIRED, now), then=Value(PauseStatus.EXPIRED.value)),
                    default=F("status"),
                    output_field=models.CharField(),
                )
            }
        )

    def resumable_now_among(self, pks: list[Any], now: datetime) -> set[Any]:
        """The primary keys among ``pks`` of the pauses :func:`resumable_now_q` holds for: one
        query, each of those rows probing the store's unique index."""
        matching = self.filter(resumable_now_q(now, self.model.store_model()), pk__in=pks)
        return set(matching.values_list("pk", flat=True))

    def in_effective_status(self, status: str, now: datetime) -> PauseQuerySet:
        """Filter on the effective status, with conditions the status index can serve."""
        return self.filter(effective_status_q(status, now))

    def pending(self) -> PauseQuerySet:
        return self.filter(status=PauseStatus.PENDING)

    def answered(self) -> PauseQuerySet:
        return self.filter(status=PauseStatus.ANSWERED)

    def expired(self, now: datetime) -> PauseQuerySet:
        """Marked expired, or still pending past their age at ``now``."""
        return self.in_effective_status(PauseStatus.EXPIRED, now)

    def overdue(self, now: datetime) -> PauseQuerySet:
        """Still marked pending, though past their age at ``now``: what ``expire`` would change."""
        return self.filter(Q(status=PauseStatus.PENDING) & _past_age(now))

    def overdue_batch(
        self, now: datetime, after: tuple[datetime, Any] | None, size: int
    ) -> list[tuple[datetime, Any]]:
        """``(expires_at, pk)`` of the next ``size`` :meth:`overdue` pauses after ``after``, in the
        order of the expiry index: a batch reads the overdue pauses and nothing else."""
        rows = self.overdue(now).order_by("expires_at", "pk")
        if after is not None:
            at, pk = after
            # The bound on expires_at alone lets the index start at the last row read.
            rows = rows.filter(Q(expires_at__gt=at) | Q(pk__gt=pk), expires_at__gte=at)
        return list(rows.values_list("expires_at", "pk")[:size])

    def settled(self) -> PauseQuerySet:
        """Answered or expired: no token of theirs can be consumed any more."""
        return self.filter(status__in=[PauseStatus.ANSWERED, PauseStatus.EXPIRED])

    def lost_in_queue(self, now: datetime) -> PauseQuerySet:
        """Handed off, never claimed for longer than ``STALLED_AFTER``, and no answer of their group
        still awaited: the queue lost the task. ``turnstate_redeliver`` hands these again."""
        awaited = self.model.objects.filter(
            effective_status_q(PauseStatus.PENDING, now), group=OuterRef("group")
        )
        return self.filter(handed_off_unclaimed_q(now)).exclude(Exists(awaited))

    def stranded(self, now: datetime) -> PauseQuerySet:
        """Answerable at ``now``, but their run cannot be continued from here (:func:`stranded_q`)."""
        return self.filter(stranded_q(now, self.model.store_model()))

    # -- who and where -------------------------------------------------------------

    def for_user(self, user: Any) -> PauseQuerySet:
        """What ``user`` may see: staff everything, others their own pauses only."""
        if not getattr(user, "is_authenticated", False):
            return self.none()
        if user.is_staff:
            return self
        return self.filter(owner=user)

    def for_thread(self, thread_id: str) -> PauseQuerySet:
        return self.filter(thread_id=thread_id)

    def in_group(self, group: str) -> PauseQuerySet:
        """The members of ``group``, found by the group index."""
        return self.filter(group=group)

    def in_group_state(self, state: str, now: datetime) -> PauseQuerySet:
        """Grouped pauses whose group is in ``state`` (one of :data:`GROUP_STATES`) at ``now``.

        Two readings of the one rule. A state a group leaves within ``TOKEN_MAX_AGE`` or
        ``STALLED_AFTER`` holds about the recent traffic's groups: they are gathered first, through
        the members that show it (:meth:`groups_in_state`). A state groups stay in until purged
        (:data:`GROUPS_KEPT_IN`) grows with history: when many members show it (a count up to
        :data:`GROUP_WALK_FROM`, asked here), a list newest first walks the ledger by its key and
        decides each grouped row's state through the group index (:func:`group_state_of`), so a
        page stops after about its own rows instead of joining every such group history kept."""
        ledger = self.model.objects.using(self.db)
        showing = ledger.filter(group_sign_q(state, now))  # refuses an unknown state
        if state not in GROUPS_KEPT_IN or showing[:GROUP_WALK_FROM].count() < GROUP_WALK_FROM:
            return self.filter(group__in=ledger.groups_in_state(state, now))
        return self.filter(Exact(group_state_case(self.model, now), Value(state)))

    def groups_in_state(self, state: str, now: datetime) -> models.QuerySet[Pause, Any]:
        """The ``group`` of each group in ``state`` at ``now``, once each: found through the members
        that show it (:func:`group_sign_q`), less the groups a state earlier in the ladder holds for
        (one probe of the group index each)."""
        sign = group_sign_q(state, now)  # refuses an unknown state
        ladder = group_ladder(now)
        names = [name for name, _ in ladder]
        earlier = ladder[: names.index(state)] if state in names else ladder
        rows = self.filter(sign)
        for _, condition in earlier:
            rows = rows.exclude(Exists(self.model.objects.filter(condition, group=OuterRef("group"))))
        return rows.order_by().values("group").distinct()

    def failed_groups(self, now: datetime) -> models.QuerySet[Pause, Any]:
        """The groups that will never continue by themselves (``turnstate_status``'s figure)."""
        return self.groups_in_state("failed", now)

    def in_failed_group(self, now: datetime) -> PauseQuerySet:
        """Members of groups that will never continue by themselves: listed for operators."""
        return self.in_group_state("failed", now)

    def with_group_state(self, now: datetime) -> PauseQuerySet:
        """Annotate ``group_state`` (None for a pause without a group): one subquery through the
        group index per row, no extra query."""
        return self.annotate(**{GROUP_STATE: group_state_case(self.model, now)})

    def group_state(self, group: str, now: datetime) -> str | None:
        """The state of ``group`` at ``now``; None when it has no members (here). One query."""
        row = self.in_group(group).with_group_state(now).values_list(GROUP_STATE, flat=True).first()
        return None if row is None else str(row)

    # -- retention -----------------------------------------------------------------

    def last_event_before(self, cutoff: datetime) -> PauseQuerySet:
        """Whose last event (``answered_at``, else ``expires_at``) came before ``cutoff``."""
        return self.filter(Q(answered_at__lt=cutoff) | Q(answered_at__isnull=True, expires_at__lt=cutoff))

    def purgeable(self, cutoff: datetime, *, include_pending: bool = False) -> PauseQuerySet:
        """What retention removes: settled pauses (any, with ``include_pending``) quiet since ``cutoff``."""
        old = self.last_event_before(cutoff)
        return old if include_pending else old.settled().exclude(unfinished_group_q(self.model))

    def purge(self, **options: Any) -> Any:
        """Deprecated: ``turnstate_app.retention.purge_pauses(queryset, ...)``, which this calls.

        Kept one minor release for code that called it; the queries do not depend on retention."""
        warnings.warn(
            "Pause.objects.purgeable(...).purge() is deprecated; call "
            "turnstate_app.retention.purge_pauses(Pause.objects.purgeable(...), ...) instead",
            DeprecationWarning,
            stacklevel=2,
        )
        from turnstate_app.retention import purge_pauses  # the deprecated way only: retention is above

        return purge_pauses(self, **options)

    # -- the state changes: each one conditional UPDATE --------------------------------

    def consumable(self, jti: str, *, now: datetime) -> PauseQuerySet:
        """The pause ``jti`` while it can still be answered at ``now``: what an answer consumes."""
        return self.filter(effective_status_q(PauseStatus.PENDING, now), jti=jti)

    def consume(self, jti: str, *, now: datetime, trace: str | None = None) -> bool:
        """Pending and within its age becomes answered: True for the one caller whose UPDATE did it.

        On PostgreSQL the resume runs this UPDATE, compiled from :meth:`consumable`, inside the
        statement that also stores the answer (:mod:`turnstate_app.ports.ledger`)."""
        return self.consumable(jti, now=now).update(**answered_values(now, trace)) == 1

    def expire(self, *, now: datetime, jti: str | None = None) -> int:
        """Pending past its age becomes expired (these pauses, or only ``jti``); how many did."""
        scope = self if jti is None else self.filter(jti=jti)
        return scope.overdue(now).update(status=PauseStatus.EXPIRED)

    def mark_unresumable(self, reason: str) -> int:
        """Record on these pauses that are pending why their run can no longer be continued
        (their checkpoints were deleted), so :meth:`CheckpointMetadataQuerySet.unresumable` lists
        them; the first reason stays. They remain answerable. How many were marked."""
        return self.filter(status=PauseStatus.PENDING, unresumable_reason__isnull=True).update(
            unresumable_reason=reason
        )


def effective_status(pause: Pause) -> str:
    """The status an answer at ``now`` meets, as annotated by :meth:`PauseQuerySet.with_effective_status`."""
    return str(getattr(pause, EFFECTIVE_STATUS))


def new_pause(model: type[Pause], claims: PauseClaims, **fields: Any) -> Pause:
    """An unsaved ledger row for ``claims`` (:meth:`PauseQuerySet.build`), without a queryset.

    Built from its field values in column order (as ``Model.from_db`` builds a row), each
    absent field at its default: a fraction of the cost of keyword arguments, which a mint
    pays on every call. Anything that is not a plain column value (an owner instance, an
    unknown name) takes the keyword path and its checks.
    """
    values = {**claims_fields(claims), **fields}
    if values.get("owner", 0) is None:
        values["owner_id"] = values.pop("owner")
    args = [values.pop(name) if name in values else default() for name, default in _columns(model)]
    if values:  # not a column: let the model refuse (or take) it as it would
        return model(**claims_fields(claims), **fields)
    positional: Any = model  # the stubs' plugin types keyword arguments only
    pause: Pause = positional(*args)
    return pause


@cache
def _columns(model: type[models.Model]) -> tuple[tuple[str, Any], ...]:
    """The model's columns (attribute name, default) in the order its positional constructor takes them.

    The default is the field's own ``get_default``, called anew for each row, as the keyword
    constructor calls it.
    """
    return tuple((field.attname, field.get_default) for field in model._meta.concrete_fields)


def claims_fields(claims: PauseClaims) -> Mapping[str, Any]:
    """The ledger row's identity fields, from the claims a token carries."""
    return {name: getattr(claims, name) for name in CLAIM_FIELDS}


def claims_of(pause: Pause) -> PauseClaims:
    """The claims a pause's token carries, rebuilt from its ledger row."""
    return PauseClaims(**{name: getattr(pause, name) for name in CLAIM_FIELDS})


class UnresumablePauseManager(models.Manager["UnresumablePause"]):
    def get_queryset(self) -> CheckpointMetadataQuerySet:  # type: ignore[override]
        return CheckpointMetadataQuerySet(self.model, using=self._db).unresumable()
