"""Messages and helpers the store tests share: short turns whose text names them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from asgiref.sync import async_to_sync
from pydantic_ai.conversation import Conversation
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart

T = TypeVar("T")


def sync(function: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
    """Run a store coroutine from a sync test: its database calls run on the test's thread
    (so inside pytest-django's transaction)."""
    return async_to_sync(function)(*args, **kwargs)


def turn(name: str) -> list[ModelMessage]:
    return [ModelRequest(parts=[UserPromptPart(f"q-{name}")]), ModelResponse(parts=[TextPart(f"a-{name}")])]


def texts(messages: list[ModelMessage]) -> list[str]:
    """What each message says: enough to compare histories across stores."""
    return [str(getattr(message.parts[0], "content", "")) for message in messages]


def conversation(conversation_id: str, *names: str) -> Conversation:
    return Conversation(conversation_id=conversation_id, messages=[m for name in names for m in turn(name)])
