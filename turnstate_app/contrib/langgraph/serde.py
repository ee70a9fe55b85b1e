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
from collections.abc import Callable, Iterable
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

# The refusals LangGraph reports while a stored object's constructor is being looked up,
# and the ones that made the current load fail (read back once the unpacker has given up).
_refusals: contextvars.ContextVar[list[SerdeEvent] | None] = contextvars.ContextVar(
    "turnstate_langgraph_refusals", default=None
)
_refused: contextvars.ContextVar[list[SerdeEvent] | None] = contextvars.ContextVar(
    "turnstate_langgraph_refused", default=None
)


class RefusedTypeError(ValueError):
    """The stored data names a type (or method) the serializer will not construct."""


def _record_refusal(event: SerdeEvent) -> None:
    refusals = _refusals.get()
    if refusals is not None and event["kind"] in _BLOCKED_KINDS:
        refusals.append(event)


register_serde_event_listener(_record_refusal)


def _watched(hook: Callable[[int, bytes], Any]) -> Callable[[int, bytes], Any]:
    """``hook`` (LangGraph's msgpack extension hook) failing the load when it refused a constructor.

    Only stored objects that name a constructor reach the hook, so a value made of plain
    data (most channel values) is read at LangGraph's own speed. The refusals of objects
    nested inside one are LangGraph's own recursive calls, which run within this one.
    """

    def strict_hook(code: int, data: bytes) -> Any:
        token = _refusals.set([])
        try:
            value = hook(code, data)
            refused = _refusals.get()
        finally:
            _refusals.reset(token)
        if refused:
            _refused.set(refused)
            raise RefusedTypeError("refused")  # the unpacker reports it as its own failure
        return value

    return strict_hook


class StrictSerializer(JsonPlusSerializer):
    """``JsonPlusSerializer`` with an explicit allowlist that raises on a refused type."""

    @property
    def _unpack_ext_hook(self) -> Callable[[int, bytes], Any]:
        return self._strict_unpack_ext_hook

    @_unpack_ext_hook.setter
    def _unpack_ext_hook(self, hook: Callable[[int, bytes], Any]) -> None:
        # Set by LangGraph's constructor and again by ``with_msgpack_allowlist`` on its clone.
        self._strict_unpack_ext_hook = _watched(hook)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        type_ = data[0]
        if type_ not in READABLE_TYPES:
            raise RefusedTypeError(f"serialization type {type_!r} is not one this serializer reads")
        try:
            return super().loads_typed(data)
        except Exception:
            refused = _refused.get()
            if not refused:
                raise
            _refused.set(None)
        names = ", ".join(
            sorted({".".join(filter(None, (e["module"], e["name"], e.get("method")))) for e in refused})
        )
        raise RefusedTypeError(
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
