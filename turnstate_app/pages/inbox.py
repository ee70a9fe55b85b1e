"""The inbox's rows: the person's answerable pauses, newest first, a page at a time by keyset.

One query per page, whatever its length: each pause's request (its question) is read in the
same statement (:func:`~turnstate_app.pause_rows.with_request`), and the owner is joined.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from turnstate_app.choices import PauseStatus
from turnstate_app.keyset import BadCursorError, bounded_pk, cursor_of, keyset_after
from turnstate_app.models import Pause
from turnstate_app.pages.questions import title_of
from turnstate_app.pause_rows import request_of, with_request

PAGE_SIZE = 25
ORDER = ("created_at", "pk")


@dataclass(frozen=True)
class InboxRow:
    pause: Pause
    title: str


@dataclass(frozen=True)
class InboxPage:
    rows: list[InboxRow]
    after: str | None
    """The cursor of the next page; None on the last."""


def waiting_for(user: Any, now: datetime, *, owner: str | None = None) -> QuerySet[Pause]:
    """The pauses ``user`` may answer at ``now`` (staff: everyone's, or ``owner``'s), newest first.

    ``owner`` is a user id as typed in the URL; one that is not an id is :class:`BadCursorError`.
    """
    pauses = Pause.objects.for_user(user).in_effective_status(PauseStatus.PENDING, now)
    if owner is not None and user.is_staff:
        try:
            pauses = pauses.filter(owner_id=bounded_pk(owner))
        except ValueError as exc:
            raise BadCursorError(f"bad owner {owner!r}") from exc
    return pauses.order_by("-created_at", "-pk")


def inbox_page(pauses: QuerySet[Pause], after: str | None, size: int = PAGE_SIZE) -> InboxPage:
    """The page of ``pauses`` after cursor ``after`` (the first without one), in one query."""
    if after is not None:
        pauses = pauses.filter(keyset_after(ORDER, after))
    found = list(with_request(pauses.select_related("owner"))[: size + 1])
    shown = found[:size]
    rows = [
        InboxRow(pause=pause, title=title_of(request_of(pause), pause.name or pause.jti)) for pause in shown
    ]
    more = len(found) > size
    return InboxPage(rows=rows, after=cursor_of((shown[-1].created_at, shown[-1].pk)) if more else None)
