"""The one pair every stored value goes through: what the models hold, and what it was.

States (a session's, an app's, a user's) and events are JSON, written with :func:`encode` and read
with :func:`decode`, nowhere else. JSON is written as ``json.dumps`` writes it (ASCII escapes), so no
NUL byte or lone surrogate of an agent's text ever reaches a database as text; an event is
``Event.model_dump(exclude_none=True, mode="json")``, as ADK's ``DatabaseSessionService`` stores it.

With keys configured (:mod:`turnstate_app.encryption`) each value is encrypted with the keys of its
row's thread (:data:`SESSION`, :data:`EVENT`, :data:`APP_STATE`, :data:`USER_STATE` say which column
that is), its key id written beside it in the same statement. Sealed or clear, each value is bound
by a MAC keyed from ``SECRET_KEY`` (:mod:`turnstate_app.integrity`) to its table and its row's
identity, and the MAC is checked before the value is decrypted or decoded: a value edited at rest,
a clear value planted where a sealed one was written, or a value moved to another row, session or
user raises :class:`~turnstate_app.errors.ChangedAtRestError`; a value whose key is gone raises
:class:`~turnstate_app.errors.UnreadableValueError`. Neither error ever holds the value. What a
MAC cannot show is a row that is gone: a writer without the key can still delete an event or a
scope's state row (it then reads as never written), never edit one, plant one or move one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Model

from turnstate_app.contrib.google_adk.models import (
    StoredAppState,
    StoredEvent,
    StoredSession,
    StoredUserState,
)
from turnstate_app.encryption import seal_text, unseal_text
from turnstate_app.errors import UnreadableValueError
from turnstate_app.integrity import require_row, row_mac


@dataclass(frozen=True)
class Sealed:
    """How one table's values are kept: the model (its label names the MAC's table), the column whose
    value selects the keys, and the columns that name a row in its MAC (in order)."""

    model: type[Model]
    thread: str
    identity: tuple[str, ...]

    @property
    def table(self) -> str:
        return self.model._meta.label


SESSION = Sealed(StoredSession, "session_id", ("app_name", "user_id", "session_id"))
"""A session's own state: keys of the session id (its pauses' thread)."""
EVENT = Sealed(
    StoredEvent,
    "session__session_id",
    ("session__app_name", "session__user_id", "session__session_id", "event_id"),
)
"""An event: keys of its session's id; named by its session and its own id."""
APP_STATE = Sealed(StoredAppState, "app_name", ("app_name",))
"""An app's state: keys of the app name."""
USER_STATE = Sealed(StoredUserState, "user_id", ("app_name", "user_id"))
"""A user's state: keys of the user id."""

Stored = tuple[str, str | None, str]
"""A value as a row holds it: the stored text, its key id (None: clear) and its MAC."""


def encode(kind: Sealed, value: Any, *, thread: str, identity: Sequence[str]) -> Stored:
    """``value`` (JSON data) as the row of ``kind`` at ``identity`` stores it."""
    stored, key_id = seal_text(json.dumps(value), thread_id=thread)
    return stored, key_id, row_mac(kind.table, identity, key_id, stored)


def decode(
    kind: Sealed, stored: str, key_id: str | None, mac: str | None, *, thread: str, identity: Sequence[str]
) -> Any:
    """The JSON data :func:`encode` was given, once the row's MAC verifies."""
    require_row(kind.table, identity, key_id, stored, mac)
    text = unseal_text(stored, key_id, thread_id=thread)
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UnreadableValueError(
            f"a {kind.table} row {list(identity)} is not readable JSON ({exc.__class__.__name__})"
        ) from None


def plain_text(
    kind: Sealed, stored: str, key_id: str | None, mac: str | None, *, thread: str, identity: Sequence[str]
) -> str:
    """The stored JSON text once the row's MAC verifies (for the admin's pages)."""
    require_row(kind.table, identity, key_id, stored, mac)
    return unseal_text(stored, key_id, thread_id=thread)
