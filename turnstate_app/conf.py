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
    # Fernet keys (str) for the values at rest: the first encrypts, every one decrypts. Empty: clear.
    "ENCRYPTION_KEYS": [],
    # Dotted path of callable(thread_id) -> list[str] of Fernet keys: per-thread (per-tenant) keys.
    "ENCRYPTION_KEY_RING": None,
    # Dotted path of callable(ResumedPause), called after an answer is committed.
    "RESUME_HANDLER": None,
    # Seconds the one who answered waits, at most, for RESUME_HANDLER; it keeps running after.
    "HANDOFF_TIMEOUT": 5,
    # Seconds after which a claimed continuation that neither completed nor failed is
    # listed as stalled, and a thread's turn held that long may be taken over.
    "STALLED_AFTER": 15 * 60,
    # Tries of a continuation that failed before running anything (wiring, a busy thread): each
    # next one waits longer; after the last, turnstate_redeliver hands it again.
    "CONTINUATION_ATTEMPTS": 3,
    # (module, name) pairs the LangGraph saver's default serializer may construct on load,
    # beyond LangGraph's own safe types (turnstate_app.contrib.langgraph).
    "LANGGRAPH_MSGPACK_ALLOWLIST": [],
    # {name: dotted path} of the compiled graphs and agents the project continues; the name is
    # the identity a pause records (graph.name / agent.name). turnstate_app.tasks looks them up.
    "AGENTS": {},
    # Dotted path of callable(pause, link), run after a pause's mint commits (never inside it): tells
    # the person there is a question. Ready-made: "turnstate_app.notify.email_owner".
    "NOTIFY": None,
    # The site's origin, e.g. "https://app.example.com": a worker that mints has no request to
    # take it from, and a link in an e-mail must be absolute.
    "PAGES_BASE_URL": None,
}


_UNSET = object()
"""``TURNSTATE`` is absent: a sentinel, so that the cache can tell "still absent" by identity."""


class TurnstateSettings:
    """Typed, lazy view of ``settings.TURNSTATE``.

    Resolved on first use and cached (the port reads it on every write). The cache remembers
    the very ``TURNSTATE`` object it was resolved from and is used only while that object is
    still the setting: a thread that resolves while ``override_settings`` swaps the setting can
    never leave the old values behind, whatever order signals and threads run in.
    """

    def __init__(self) -> None:
        self._cache: tuple[object, dict[str, Any]] | None = None

    @property
    def raw(self) -> Any:
        """The user's dict exactly as given (checks validate it)."""
        return getattr(settings, "TURNSTATE", {})

    def reset(self, *, setting: str = "TURNSTATE", **_: Any) -> None:
        """Forget the resolved values now (connected to ``setting_changed``)."""
        if setting == "TURNSTATE":
            self._cache = None

    def values(self) -> dict[str, Any]:
        """Every key, the user's over the defaults; the same dict until ``TURNSTATE`` changes."""
        source = getattr(settings, "TURNSTATE", _UNSET)
        cached = self._cache  # one read: another thread may replace it meanwhile
        if cached is not None and cached[0] is source:
            return cached[1]
        resolved = {**DEFAULTS, **(source if isinstance(source, dict) else {})}
        self._cache = (source, resolved)
        return resolved

    def _get(self, name: str) -> Any:
        return self.values()[name]

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
    def ENCRYPTION_KEYS(self) -> list[str]:  # noqa: N802
        value = self._get("ENCRYPTION_KEYS")
        return list(value) if isinstance(value, list | tuple) else []

    @property
    def ENCRYPTION_KEY_RING(self) -> str | None:  # noqa: N802
        value = self._get("ENCRYPTION_KEY_RING")
        return None if value is None else str(value)

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
    def CONTINUATION_ATTEMPTS(self) -> int:  # noqa: N802
        return int(self._get("CONTINUATION_ATTEMPTS"))

    @property
    def LANGGRAPH_MSGPACK_ALLOWLIST(self) -> list[tuple[str, ...]]:  # noqa: N802
        return [tuple(entry) for entry in self._get("LANGGRAPH_MSGPACK_ALLOWLIST")]

    @property
    def AGENTS(self) -> dict[str, str]:  # noqa: N802
        value = self._get("AGENTS")
        return dict(value) if isinstance(value, dict) else {}

    @property
    def NOTIFY(self) -> str | None:  # noqa: N802
        value = self._get("NOTIFY")
        return None if value is None else str(value)

    @property
    def PAGES_BASE_URL(self) -> str | None:  # noqa: N802
        value = self._get("PAGES_BASE_URL")
        return None if value is None else str(value)


conf = TurnstateSettings()
