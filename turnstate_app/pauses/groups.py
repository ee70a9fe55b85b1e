"""Pause groups: several questions of one run, answered one by one, continued once.

A run that stops for several answers at once (PydanticAI's deferred tool calls refuse
partial results) mints one pause per question under one ``group``. Each member is
answered exactly once like any pause; the run continues once, when the last member is
answered (:mod:`turnstate_app.pauses.continuation`). Every member shares one thread, so the
group's continuation takes that thread's turn.

The group's first member in mint order is its *lead*: the group's continuation is claimed
for every member in one UPDATE, and every member moves through the states of
:mod:`turnstate_app.after_answer` with the lead.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Q, Subquery

from turnstate_app.after_answer import DONE
from turnstate_app.choices import ContinuationState
from turnstate_app.models import Pause, PauseQuerySet
from turnstate_app.ports.limits import require_id


def check_group(group: str | None, thread_id: str) -> str | None:
    """``group`` when a pause of ``thread_id`` may join it; ``ValueError`` otherwise.

    Its members (so far) must share the thread, and its run must not have continued or
    refused already: a member joining then would never be continued. One read, only when a
    group is given.
    """
    if group is None:
        return None
    require_id("group", group)
    conflict = (
        Pause.objects.in_group(group)
        .filter(~Q(thread_id=thread_id) | Q(continuation__in=DONE))
        .values_list("thread_id", "continuation", "continuation_reason")
        .first()
    )
    if conflict is None:
        return group
    other, state, reason = conflict
    if other != thread_id:
        raise ValueError(
            f"pause group {group!r} belongs to thread {other!r}; every member of a group shares one "
            f"thread, so a pause of thread {thread_id!r} cannot join it"
        )
    done = (
        "continued" if state == ContinuationState.CONTINUED else f"ended its continuation: {state} ({reason})"
    )
    raise ValueError(f"pause group {group!r} has already {done}; a new member would never be continued")


def run_of(jti: str, now: datetime, pauses: PauseQuerySet) -> tuple[Pause | None, list[Pause]]:
    """The pause ``jti`` and every pause its continuation moves (its group's members in mint
    order, or itself alone), with their effective status and owner, in one read: the pause by its
    jti, its group's members by the group index (a lone pause matches nothing there). ``(None, [])``
    when it is not in the ledger."""
    group = pauses.filter(jti=jti, group__isnull=False).values("group")[:1]
    rows = list(
        pauses.select_related("owner")
        .with_effective_status(now)
        .filter(Q(jti=jti) | Q(group=Subquery(group)))
        .order_by("created_at", "pk")
    )
    pause = next((row for row in rows if row.jti == jti), None)
    return (pause, rows) if pause is not None else (None, [])
