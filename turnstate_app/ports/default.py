"""The store a deployment uses unless it builds its own: wired with ``TURNSTATE['PORT']``."""

from __future__ import annotations

import threading
from typing import Any

from django.utils.module_loading import import_string

from turnstate_app.conf import conf
from turnstate_app.durability import require_durable_consumption
from turnstate_app.turnstate import TurnCheckpointStore

_lock = threading.Lock()
_built: tuple[dict[str, Any], TurnCheckpointStore] | None = None
"""The store, with the resolved settings it was built from (see :meth:`TurnstateSettings.values`)."""


def build_port() -> Any:
    """Instantiate the configured port class with no arguments."""
    return import_string(conf.PORT)()


def get_default_store() -> TurnCheckpointStore:
    """The configured store, built once per ``TURNSTATE``; a volatile port is refused when
    durability is required.

    Kept only while the settings it was built from are still the current ones, so a store built
    by one thread while another swaps ``TURNSTATE`` is never served after the swap.
    """
    global _built
    values = conf.values()
    built = _built
    if built is not None and built[0] is values:
        return built[1]
    with _lock:
        built = _built
        if built is None or built[0] is not values:
            port = import_string(values["PORT"])()
            if values["REQUIRE_DURABLE"]:
                require_durable_consumption(port)
            built = (values, TurnCheckpointStore(commands=port))
            _built = built
    return built[1]


def reset_default_store(*, setting: str = "TURNSTATE", **_: Any) -> None:
    """Forget the built store when ``TURNSTATE`` changes (connected to ``setting_changed``)."""
    global _built
    if setting == "TURNSTATE":
        with _lock:
            _built = None
