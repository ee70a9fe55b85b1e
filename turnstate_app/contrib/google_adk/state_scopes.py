"""ADK's state keys in their three stored scopes: ``app:`` and ``user:`` apart, ``temp:`` never kept.

A session's state as ADK hands it over mixes the scopes by prefix. Stored, each scope lives in its
own row (the app's, the user's, the session's) without the prefix, and a read puts the prefixes
back, as ADK's ``DatabaseSessionService`` does. Values are made JSON the way that service makes them
(pydantic's ``to_jsonable_python``; a value that has no JSON form becomes its ``str``, with a warning),
so what one process stores reads back alike in every other.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from google.adk.sessions.state import State
from pydantic_core import to_jsonable_python

logger = logging.getLogger(__name__)


@dataclass
class Scopes:
    """A state (or a state delta) split by scope, keys without their prefix, ``temp:`` keys dropped."""

    app: dict[str, Any] = field(default_factory=dict)
    user: dict[str, Any] = field(default_factory=dict)
    session: dict[str, Any] = field(default_factory=dict)


def json_safe(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` as JSON data; what has no JSON form is kept as its ``str`` (and logged), never lost
    silently nor failing the whole write."""
    try:
        safe: dict[str, Any] = to_jsonable_python(value)
    except Exception:  # whatever pydantic refuses: the value is kept, as text
        logger.warning("a state value has no JSON form; it is stored as its str()", exc_info=True)
        safe = to_jsonable_python(value, fallback=str)
    return safe


def split(state: dict[str, Any] | None) -> Scopes:
    """``state``'s keys by scope, JSON-safe; ``temp:`` keys are never stored."""
    scopes = Scopes()
    for key, value in json_safe(dict(state or {})).items():
        if key.startswith(State.APP_PREFIX):
            scopes.app[key.removeprefix(State.APP_PREFIX)] = value
        elif key.startswith(State.USER_PREFIX):
            scopes.user[key.removeprefix(State.USER_PREFIX)] = value
        elif not key.startswith(State.TEMP_PREFIX):
            scopes.session[key] = value
    return scopes


def merged(app: dict[str, Any], user: dict[str, Any], session: dict[str, Any]) -> dict[str, Any]:
    """The state a session is handed: its own keys, then the app's and the user's under their prefix."""
    state = dict(session)
    state.update({State.APP_PREFIX + key: value for key, value in app.items()})
    state.update({State.USER_PREFIX + key: value for key, value in user.items()})
    return state
