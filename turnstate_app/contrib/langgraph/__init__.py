"""LangGraph on Django's database: a checkpoint saver, interrupts as pauses, continued once.

Add ``"turnstate_app.contrib.langgraph"`` to ``INSTALLED_APPS`` (extra ``langgraph``).
The public names load lazily, so importing this package before the app registry is
ready (in a settings module, an ``AppConfig``) works.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from turnstate_app.contrib._lazy import lazy_exports

if TYPE_CHECKING:
    from turnstate_app.contrib.langgraph.bridge import (
        acontinue_graph,
        apause_interrupts,
        continue_graph,
        pause_interrupts,
    )
    from turnstate_app.contrib.langgraph.errors import UnnamedGraphError, UnreadableCheckpointError
    from turnstate_app.contrib.langgraph.interrupts import InterruptValueError
    from turnstate_app.contrib.langgraph.saver import DjangoCheckpointSaver
    from turnstate_app.contrib.langgraph.serde import StrictSerializer, default_serde

__all__ = [
    "DjangoCheckpointSaver",
    "InterruptValueError",
    "StrictSerializer",
    "UnnamedGraphError",
    "UnreadableCheckpointError",
    "acontinue_graph",
    "apause_interrupts",
    "continue_graph",
    "default_serde",
    "pause_interrupts",
]

_EXPORTS = {
    "DjangoCheckpointSaver": "turnstate_app.contrib.langgraph.saver",
    "StrictSerializer": "turnstate_app.contrib.langgraph.serde",
    "default_serde": "turnstate_app.contrib.langgraph.serde",
    "UnreadableCheckpointError": "turnstate_app.contrib.langgraph.errors",
    "UnnamedGraphError": "turnstate_app.contrib.langgraph.errors",
    "pause_interrupts": "turnstate_app.contrib.langgraph.bridge",
    "apause_interrupts": "turnstate_app.contrib.langgraph.bridge",
    "continue_graph": "turnstate_app.contrib.langgraph.bridge",
    "acontinue_graph": "turnstate_app.contrib.langgraph.bridge",
    "InterruptValueError": "turnstate_app.contrib.langgraph.interrupts",
}


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
