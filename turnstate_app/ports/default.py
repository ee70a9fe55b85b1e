"""The store a deployment uses unless it builds its own: wired with ``TURNSTATE['PORT']``."""

from __future__ import annotations

import threading
from typing import Any

from django.utils.module_loading import import_string

from turnstate_app.conf import conf
from turnstate_app.durability import require_durable_consumption
from turnstate_app.turnstate import TurnCheckpointStore

_lock = threading.Lock()
_store: TurnCheckpointStore | None = None


def build_port() -> Any:
    """Instantiate the configured port class with no arguments."""
    return import_string(conf.PORT)()


def get_default_store() -> TurnCheckpointStore:
    """The configured store, built once; a volatile port is refused when durability is required."""
    global _store
    store = _store
    if store is None:
        with _lock:
            if _store is None:
                port = build_port()
                if conf.REQUIRE_DURABLE:
                    require_durable_consumption(port)
                _store = TurnCheckpointStore(commands=port)
            store = _store
    return store


def reset_default_store(*, setting: str = "TURNSTATE", **_: Any) -> None:
    """Forget the built store when ``TURNSTATE`` changes (connected to ``setting_changed``)."""
    global _store
    if setting == "TURNSTATE":
        with _lock:
            _store = None
