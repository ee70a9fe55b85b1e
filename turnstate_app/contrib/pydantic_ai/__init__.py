"""PydanticAI on Django's database: a conversation store, deferred tool calls as durable pauses.

Add ``"turnstate_app.contrib.pydantic_ai"`` to ``INSTALLED_APPS`` (extra ``pydantic-ai``).
The public names load lazily, so importing this package before the app registry is
ready (in a settings module, an ``AppConfig``) works.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from turnstate_app.contrib._lazy import lazy_exports

if TYPE_CHECKING:
    from turnstate_app.contrib.pydantic_ai.continuing import acontinue_agent, continue_agent
    from turnstate_app.contrib.pydantic_ai.errors import (
        ConversationNotSavedError,
        UnnamedAgentError,
        UnreadableConversationError,
    )
    from turnstate_app.contrib.pydantic_ai.pausing import apause_deferred, pause_deferred
    from turnstate_app.contrib.pydantic_ai.store import DjangoConversationStore

__all__ = [
    "ConversationNotSavedError",
    "DjangoConversationStore",
    "UnnamedAgentError",
    "UnreadableConversationError",
    "acontinue_agent",
    "apause_deferred",
    "continue_agent",
    "pause_deferred",
]

_EXPORTS = {
    "DjangoConversationStore": "turnstate_app.contrib.pydantic_ai.store",
    "UnreadableConversationError": "turnstate_app.contrib.pydantic_ai.errors",
    "ConversationNotSavedError": "turnstate_app.contrib.pydantic_ai.errors",
    "UnnamedAgentError": "turnstate_app.contrib.pydantic_ai.errors",
    "pause_deferred": "turnstate_app.contrib.pydantic_ai.pausing",
    "apause_deferred": "turnstate_app.contrib.pydantic_ai.pausing",
    "continue_agent": "turnstate_app.contrib.pydantic_ai.continuing",
    "acontinue_agent": "turnstate_app.contrib.pydantic_ai.continuing",
}


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
