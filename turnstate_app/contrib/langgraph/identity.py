"""Which graph a pause belongs to: its name, so that only that graph continues it.

Two compiled graphs of one project share the saver, so either can read the other's thread.
A pause therefore records ``graph.name`` and ``continue_graph`` refuses any other graph
before the continuation is claimed. LangGraph names every graph ``"LangGraph"`` unless
told otherwise, which tells no two apart: such a graph cannot pause.
"""

from __future__ import annotations

from typing import Any

from turnstate_app.contrib.langgraph.errors import UnnamedGraphError

DEFAULT_NAME = "LangGraph"
"""What LangGraph names a compiled graph (``create_agent``'s too) when the code does not."""


def name_of(graph: Any) -> str | None:
    """``graph.name`` as LangGraph has it; None when the graph has none at all."""
    name = getattr(graph, "name", None)
    return name if isinstance(name, str) and name else None


def required_name(graph: Any) -> str:
    """The graph's own name, or :class:`UnnamedGraphError` saying how to give it one."""
    name = name_of(graph)
    if name is None or name == DEFAULT_NAME:
        raise UnnamedGraphError(
            f"this graph has LangGraph's default name ({name or DEFAULT_NAME!r}), which every unnamed "
            "graph shares, so its pauses could be continued by any of them: name it where it is "
            'compiled, builder.compile(name="trip_planner"), or for LangChain\'s agents '
            'create_agent(..., name="trip_planner"); the name is recorded with each pause'
        )
    return name
