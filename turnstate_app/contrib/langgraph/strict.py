"""Strict resume: an answer for an interrupt that is no longer pending is refused, not misapplied.

In its default mode LangGraph gives an answer whose interrupt id was already consumed
to the *next* ``interrupt()`` of the same node: a re-sent answer would answer a
question nobody saw. Strict mode refuses it with ``UnknownInterruptError`` before
anything is written. It is switched on by a config key LangGraph keeps private
(``CONFIG_KEY_STRICT_RESUME``), so it is looked up, not assumed: without it the
continuation still checks that the interrupt is pending at the head while holding the
thread's turn, which is what keeps our own continuations from racing each other.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig


def strict_resume_key() -> str | None:
    """LangGraph's config key for strict resume, when this version has one."""
    try:
        from langgraph._internal import _constants
    except ImportError:  # pragma: no cover - a LangGraph that moved its constants
        return None
    key = getattr(_constants, "CONFIG_KEY_STRICT_RESUME", None)
    return key if isinstance(key, str) else None


def unknown_interrupt_error() -> type[BaseException] | None:
    try:
        from langgraph.errors import UnknownInterruptError
    except ImportError:  # pragma: no cover - older LangGraph
        return None
    return UnknownInterruptError


def is_refused_answer(error: BaseException) -> bool:
    """An answer the graph validated against its ``response_schema`` and refused."""
    try:
        from langgraph.errors import is_invalid_resume
    except ImportError:  # pragma: no cover - older LangGraph
        return False
    return bool(is_invalid_resume(error))


def strict(config: RunnableConfig) -> RunnableConfig:
    """``config`` with strict resume switched on (unchanged when LangGraph has no such mode)."""
    key = strict_resume_key()
    configurable: dict[str, Any] = dict(config.get("configurable") or {})
    if key is not None:
        configurable[key] = True
    return {**config, "configurable": configurable}
