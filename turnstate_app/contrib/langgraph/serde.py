"""The default serializer: LangGraph's own, strict, and loud when it refuses a type.

LangGraph's ``JsonPlusSerializer`` is permissive unless ``LANGGRAPH_STRICT_MSGPACK`` is
set before it is imported: a stored row naming any importable callable is imported and
called on load. This one allows only LangGraph's curated types, this app's own pydantic
models and ``TURNSTATE["LANGGRAPH_MSGPACK_ALLOWLIST"]``. Where LangGraph would quietly
hand back the raw arguments of a refused type, it raises instead, so a tampered or
unexpected row is an error, never half-loaded state. It reads only the formats it
writes (no ``json`` revival, no pickle).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable
from typing import Any

from langgraph.checkpoint.serde.event_hooks import SerdeEvent, register_serde_event_listener
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from turnstate_app.conf import conf

# The project's own pydantic models, which pauses may carry in a graph's state.
BUILTIN_ALLOWLIST: tuple[tuple[str, str], ...] = (
    ("turnstate_app.contracts", "PauseClaims"),
    ("turnstate_app.turnstate", "TurnCheckpoint"),
)
READABLE_TYPES = frozenset({"null", "bytes", "bytearray", "msgpack"})
_BLOCKED_KINDS = frozenset({"msgpack_blocked", "msgpack_method_blocked"})

# The refusals LangGraph reports while a stored value is being loaded (None outside a load).
_refusals: contextvars.ContextVar[list[SerdeEvent] | None] = contextvars.ContextVar(
    "turnstate_langgraph_refusals", default=None
)


class RefusedTypeError(ValueError):
    """The stored data names a type (or method) the serializer will not construct."""


def _record_refusal(event: SerdeEvent) -> None:
    refusals = _refusals.get()
    if refusals is not None and event["kind"] in _BLOCKED_KINDS:
        refusals.append(event)


register_serde_event_listener(_record_refusal)


class StrictSerializer(JsonPlusSerializer):
    """``JsonPlusSerializer`` with an explicit allowlist that raises on a refused type.

    LangGraph reports each constructor it refuses through its public serde events and loads on
    (the refused object left out); a load that saw a refusal fails here instead, whether or not
    LangGraph itself went on.
    """

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        type_ = data[0]
        if type_ not in READABLE_TYPES:
            raise RefusedTypeError(f"serialization type {type_!r} is not one this serializer reads")
        token = _refusals.set([])
        try:
            value = super().loads_typed(data)
        except Exception as error:
            refused = _refusals.get()
            if refused:
                raise refusal(refused) from error
            raise
        else:
            refused = _refusals.get()
        finally:
            _refusals.reset(token)
        if refused:
            raise refusal(refused)
        return value


def refusal(events: list[SerdeEvent]) -> RefusedTypeError:
    """The error naming every constructor LangGraph refused in one load."""
    names = ", ".join(
        sorted({".".join(filter(None, (e["module"], e["name"], e.get("method")))) for e in events})
    )
    return RefusedTypeError(
        f"refused to construct {names}: not in LangGraph's safe types nor in "
        "TURNSTATE['LANGGRAPH_MSGPACK_ALLOWLIST']"
    )


def configured_allowlist() -> tuple[tuple[str, ...], ...]:
    """``TURNSTATE["LANGGRAPH_MSGPACK_ALLOWLIST"]`` as tuples of (module, name)."""
    return tuple(tuple(entry) for entry in conf.LANGGRAPH_MSGPACK_ALLOWLIST)


def default_serde(extra: Iterable[tuple[str, ...]] = ()) -> StrictSerializer:
    """The saver's serializer when none is given, built from the settings at that moment."""
    allowlist = {*BUILTIN_ALLOWLIST, *configured_allowlist(), *(tuple(e) for e in extra)}
    return StrictSerializer(allowed_msgpack_modules=tuple(sorted(allowlist)))
