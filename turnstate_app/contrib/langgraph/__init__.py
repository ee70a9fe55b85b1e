"""LangGraph on Django's database: a checkpoint saver, its admin and its retention hooks.

Add ``"turnstate_app.contrib.langgraph"`` to ``INSTALLED_APPS`` (extra ``langgraph``).
The public names load lazily, so importing this package before the app registry is
ready (in a settings module, an ``AppConfig``) works.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from turnstate_app.contrib.langgraph.errors import UnreadableCheckpointError
    from turnstate_app.contrib.langgraph.saver import DjangoCheckpointSaver
    from turnstate_app.contrib.langgraph.serde import StrictSerializer, default_serde

__all__ = ["DjangoCheckpointSaver", "StrictSerializer", "UnreadableCheckpointError", "default_serde"]

_EXPORTS = {
    "DjangoCheckpointSaver": "turnstate_app.contrib.langgraph.saver",
    "StrictSerializer": "turnstate_app.contrib.langgraph.serde",
    "default_serde": "turnstate_app.contrib.langgraph.serde",
    "UnreadableCheckpointError": "turnstate_app.contrib.langgraph.errors",
}


def __getattr__(name: str) -> Any:
    module_path = _EXPORTS.get(name)
    if module_path is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module_path), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
