"""The saver's serializer policy, checked at start-up (ids continue the core's)."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Error, Warning

from turnstate_app.conf import conf
from turnstate_app.contrib.langgraph.compat import langgraph_strict_msgpack

ALLOWLIST_KEY = "LANGGRAPH_MSGPACK_ALLOWLIST"


def _well_formed(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(
        isinstance(entry, (list, tuple)) and len(entry) >= 2 and all(isinstance(p, str) and p for p in entry)
        for entry in value
    )


def check_serde_policy(**_: Any) -> list[CheckMessage]:
    """E011: the allowlist is malformed. W003: nothing but LangGraph's safe types can be loaded."""
    raw = conf.raw
    allowlist = raw.get(ALLOWLIST_KEY, []) if isinstance(raw, dict) else []
    if not _well_formed(allowlist):
        return [
            Error(
                f"TURNSTATE[{ALLOWLIST_KEY!r}] must be a list of (module, name) pairs, not {allowlist!r}.",
                hint='E.g. [("myapp.state", "TripState")]: the types your graphs keep in their state.',
                id="turnstate.E011",
            )
        ]
    if not langgraph_strict_msgpack() and not allowlist:
        return [
            Warning(
                "LangGraph's strict msgpack mode is off and TURNSTATE['LANGGRAPH_MSGPACK_ALLOWLIST'] is "
                "empty: DjangoCheckpointSaver's default serializer refuses every type outside LangGraph's "
                "safe list, so a graph whose state holds your own classes (pydantic models, dataclasses) "
                "cannot be resumed.",
                hint="Set LANGGRAPH_STRICT_MSGPACK=true in the environment before LangGraph is imported "
                "(each compiled graph then allows its own state types), or list the types in "
                "TURNSTATE['LANGGRAPH_MSGPACK_ALLOWLIST'].",
                id="turnstate.W003",
            )
        ]
    return []
