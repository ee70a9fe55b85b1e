"""Pause groups: several questions of one run, answered one by one, continued once.

A run that stops for several answers at once (PydanticAI's deferred tool calls refuse
partial results) mints one pause per question under one ``group``. Each member is
answered exactly once like any pause; the run continues once, when the last member is
answered (:mod:`turnstate_app.pauses.continuation`). Every member shares one thread, so the
group's continuation takes that thread's turn.

The group's first member in mint order is its *lead*: the group's continuation is claimed
on the lead's ledger row, and every member moves through the states of
:mod:`turnstate_app.after_answer` with it.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Q

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


def members_of(pause: Pause, now: datetime, pauses: PauseQuerySet) -> list[Pause]:
    """Every pause of ``pause``'s group in mint order, read from ``pauses`` with their effective
    status (``[pause]`` without a group)."""
    if pause.group is None:
        return [pause]
    return list(pauses.in_group(pause.group).with_effective_status(now).order_by("created_at", "pk"))
