"""The app's settings: one ``TURNSTATE`` dict over documented defaults, read lazily.

Read on every access, so ``override_settings`` works and nothing is written into
``django.conf.settings``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

DEFAULTS: dict[str, Any] = {
    # Dotted path of the port class; its no-argument constructor builds the port.
    "PORT": "turnstate_app.ports.ModelCheckpointCommandPort",
    # Refuse a volatile port at start-up (system check) and when the store is built.
    "REQUIRE_DURABLE": True,
    # Seconds a pause's token stays answerable.
    "TOKEN_MAX_AGE": 7 * 24 * 3600,
    # Values larger than this (UTF-8 bytes) are refused by the port before writing.
    "MAX_VALUE_BYTES": 8 * 1024 * 1024,
    # Dotted path of callable(ResumedPause), called after an answer is committed.
    "RESUME_HANDLER": None,
    # Seconds the one who answered waits, at most, for RESUME_HANDLER; it keeps running after.
    "HANDOFF_TIMEOUT": 5,
    # Seconds after which a claimed continuation that neither completed nor failed is
    # listed as stalled, and a thread's turn held that long may be taken over.
    "STALLED_AFTER": 15 * 60,
    # (module, name) pairs the LangGraph saver's default serializer may construct on load,
    # beyond LangGraph's own safe types (turnstate_app.contrib.langgraph).
    "LANGGRAPH_MSGPACK_ALLOWLIST": [],
    # {name: dotted path} of the compiled graphs and agents the project continues; the name is
    # the identity a pause records (graph.name / agent.name). turnstate_app.tasks looks them up.
    "AGENTS": {},
}


class TurnstateSettings:
    """Typed, lazy view of ``settings.TURNSTATE``.

    Resolved on first use and cached (the port reads it on every write), and forgotten
    whenever ``TURNSTATE`` changes, so ``override_settings`` still works.
    """

    def __init__(self) -> None:
        self._resolved: dict[str, Any] | None = None

    @property
    def raw(self) -> Any:
        """The user's dict exactly as given (checks validate it)."""
        return getattr(settings, "TURNSTATE", {})

    def reset(self, *, setting: str = "TURNSTATE", **_: Any) -> None:
        """Forget the resolved values (connected to ``setting_changed``)."""
        if setting == "TURNSTATE":
            self._resolved = None

    def _get(self, name: str) -> Any:
        resolved = self._resolved
        if resolved is None:
            user = self.raw
            resolved = {**DEFAULTS, **(user if isinstance(user, dict) else {})}
            self._resolved = resolved
        return resolved[name]

    @property
    def PORT(self) -> str:  # noqa: N802 - mirrors the setting's key
        return str(self._get("PORT"))

    @property
    def REQUIRE_DURABLE(self) -> bool:  # noqa: N802
        return bool(self._get("REQUIRE_DURABLE"))

    @property
    def TOKEN_MAX_AGE(self) -> int:  # noqa: N802
        return int(self._get("TOKEN_MAX_AGE"))

    @property
    def MAX_VALUE_BYTES(self) -> int:  # noqa: N802
        return int(self._get("MAX_VALUE_BYTES"))

    @property
    def RESUME_HANDLER(self) -> str | None:  # noqa: N802
        value = self._get("RESUME_HANDLER")
        return None if value is None else str(value)

    @property
    def HANDOFF_TIMEOUT(self) -> float:  # noqa: N802
        return float(self._get("HANDOFF_TIMEOUT"))

    @property
    def STALLED_AFTER(self) -> float:  # noqa: N802
        return float(self._get("STALLED_AFTER"))

    @property
    def LANGGRAPH_MSGPACK_ALLOWLIST(self) -> list[tuple[str, ...]]:  # noqa: N802
        return [tuple(entry) for entry in self._get("LANGGRAPH_MSGPACK_ALLOWLIST")]

    @property
    def AGENTS(self) -> dict[str, str]:  # noqa: N802
        value = self._get("AGENTS")
        return dict(value) if isinstance(value, dict) else {}


conf = TurnstateSettings()
