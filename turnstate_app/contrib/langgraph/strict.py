"""Strict resume: an answer for an interrupt that is no longer pending is refused, not misapplied.

In its default mode LangGraph gives an answer whose interrupt id was already consumed
to the *next* ``interrupt()`` of the same node: a re-sent answer would answer a
question nobody saw. Strict mode refuses it with ``UnknownInterruptError`` before
anything is written. It is switched on by a config key LangGraph exports no name for,
so ``compat`` keeps it (pinned by a test to LangGraph's behaviour), and a LangGraph
without strict resume gets none: the continuation still checks that the interrupt is
pending at the head while holding the thread's turn, which is what keeps our own
continuations from racing each other.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from turnstate_app.contrib.langgraph import compat


def strict_resume_key() -> str | None:
    """LangGraph's config key for strict resume, when this version has one."""
    return compat.strict_resume_config_key()


def unknown_interrupt_error() -> type[BaseException] | None:
    return compat.unknown_interrupt_error()


def is_refused_answer(error: BaseException) -> bool:
    """An answer the graph validated against its ``response_schema`` and refused."""
    return compat.is_invalid_resume(error)


def strict(config: RunnableConfig) -> RunnableConfig:
    """``config`` with strict resume switched on (unchanged when LangGraph has no such mode)."""
    key = strict_resume_key()
    configurable: dict[str, Any] = dict(config.get("configurable") or {})
    if key is not None:
        configurable[key] = True
    return {**config, "configurable": configurable}
