"""From a ledger row to the store rows it points at, as subqueries: a page of pauses stays one query.

The request row lives at ``(thread_id, checkpoint_id, request_key)`` and the answer at
``(thread_id, checkpoint_id, answer:<jti>)``; both are found through the store's unique index.
"""

from __future__ import annotations

import json
from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Concat

from turnstate_app.checkpoints import ANSWER_KEY_PREFIX
from turnstate_app.errors import UnreadableValueError
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.ports.sealing import read_row

__all__ = ["answer_row", "parsed", "request_of", "request_row", "with_request"]


def request_row() -> QuerySet[CheckpointMetadata]:
    """The request row of the pause in the outer query."""
    return CheckpointMetadata.objects.filter(
        thread_id=OuterRef("thread_id"), checkpoint_id=OuterRef("checkpoint_id"), key=OuterRef("request_key")
    )


def answer_row() -> QuerySet[CheckpointMetadata]:
    """The answer row of the pause in the outer query (absent until it is answered)."""
    return CheckpointMetadata.objects.filter(
        thread_id=OuterRef("thread_id"),
        checkpoint_id=OuterRef("checkpoint_id"),
        key=Concat(Value(ANSWER_KEY_PREFIX), OuterRef("jti")),
    )


def with_request(pauses: QuerySet[Pause]) -> QuerySet[Pause]:
    """Annotates ``request_value`` (the stored text of each pause's request, or None),
    ``request_key_id`` (the key it is encrypted with; None: clear) and ``request_mac`` (its MAC),
    in the same query."""
    return pauses.annotate(
        request_value=Subquery(request_row().values("value")[:1]),
        request_key_id=Subquery(request_row().values("encryption_key_id")[:1]),
        request_mac=Subquery(request_row().values("value_mac")[:1]),
    )


def request_of(pause: Pause) -> Any:
    """The request :func:`with_request` annotated, its MAC verified, decrypted and parsed; None
    when absent or unreadable (changed at rest, or its key gone)."""
    stored: str | None = getattr(pause, "request_value", None)
    if stored is None:
        return None
    key_id, mac = getattr(pause, "request_key_id", None), getattr(pause, "request_mac", None)
    try:
        return parsed(read_row(pause.thread_id, pause.checkpoint_id, pause.request_key, stored, key_id, mac))
    except UnreadableValueError:
        return None


def parsed(raw: str | None) -> Any:
    """A stored value as JSON; None when absent or unreadable (the value is the app's own JSON)."""
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None
