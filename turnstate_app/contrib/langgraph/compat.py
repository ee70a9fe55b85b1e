"""Every place the contrib relies on LangGraph behaviour that LangGraph does not export by name.

Each probe here reads only LangGraph's public surface (its documented environment variable,
its public ``langgraph.errors``) and a value that a test pins to LangGraph's observed
behaviour (``tests/contrib/langgraph/test_compat.py``): when LangGraph changes one, that
test fails instead of the contrib quietly losing a safeguard.
"""

from __future__ import annotations

import os

# LangGraph's documented switch (``JsonPlusSerializer``'s docstring) for refusing every type
# outside its safe list; it is read once, when LangGraph is imported.
STRICT_MSGPACK_ENVIRON = "LANGGRAPH_STRICT_MSGPACK"
_TRUE = ("1", "true", "yes")

# The config key that switches on strict resume (an answer whose interrupt is no longer
# pending raises ``UnknownInterruptError``). LangGraph reads it but exports no name for it.
STRICT_RESUME_CONFIG_KEY = "__pregel_strict_resume"


def langgraph_strict_msgpack() -> bool:
    """Whether the environment asks LangGraph's serializer to refuse every type outside its safe list.

    Read when asked, with LangGraph's own spelling of true; LangGraph reads it once, at
    import, which is why the start-up check's hint says to set it before then.
    """
    return os.environ.get(STRICT_MSGPACK_ENVIRON, "false").lower() in _TRUE


def strict_resume_config_key() -> str | None:
    """The strict-resume config key, or None for a LangGraph without strict resume.

    Strict resume came with its error, ``langgraph.errors.UnknownInterruptError``: a LangGraph
    that exports the error reads the key.
    """
    return STRICT_RESUME_CONFIG_KEY if unknown_interrupt_error() is not None else None


def unknown_interrupt_error() -> type[BaseException] | None:
    """LangGraph's error for an answer to an interrupt that is not pending, where it has one."""
    try:
        from langgraph.errors import UnknownInterruptError
    except ImportError:  # pragma: no cover - a LangGraph before strict resume
        return None
    return UnknownInterruptError


def is_invalid_resume(error: BaseException) -> bool:
    """Whether LangGraph refused ``error``'s answer against the interrupt's ``response_schema``."""
    try:
        from langgraph.errors import is_invalid_resume
    except ImportError:  # pragma: no cover - a LangGraph before response schemas
        return False
    return bool(is_invalid_resume(error))
