"""A lone surrogate in a conversation's ids, scope, messages or deferred calls is a ``CheckpointFieldError``.

No database stores one as text; the driver's ``UnicodeEncodeError`` (or pydantic's serialization
error) named neither the field nor the limit.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction
from pydantic_ai.conversation import Conversation
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.tools import DeferredToolRequests

from tests.contrib.pydantic_ai.conversations import conversation
from turnstate_app.contrib.pydantic_ai import DjangoConversationStore
from turnstate_app.contrib.pydantic_ai.models import StoredConversation
from turnstate_app.errors import CheckpointFieldError

pytestmark = pytest.mark.django_db

LONE = "\ud800"


def refused(call: Any) -> CheckpointFieldError:
    with pytest.raises(CheckpointFieldError, match="lone surrogate") as caught:
        call()
    return caught.value


def test_ids_and_scope() -> None:
    store = DjangoConversationStore()
    assert refused(lambda: store.save_sync(conversation(f"c{LONE}", "one"))).field == "conversation_id"
    assert refused(lambda: store.save_sync(conversation("c-1", "one"), scope=f"s{LONE}")).field == "scope"
    for read in (
        lambda: store.load_sync(f"c{LONE}"),
        lambda: store.read_record_sync(f"c{LONE}"),
        lambda: store.read_entry_sync(f"e{LONE}"),
        lambda: store.delete_record_sync(f"c{LONE}", expected_revision="r"),
    ):
        refused(read)
    assert not StoredConversation.objects.exists()


@pytest.mark.parametrize(
    "message",
    [
        ModelRequest(parts=[UserPromptPart(f"hello {LONE}")]),
        ModelResponse(parts=[TextPart(f"a{LONE}")]),
        ModelResponse(parts=[ToolCallPart("book", {f"k{LONE}": 1}, tool_call_id="call-1")]),
        ModelResponse(parts=[ToolCallPart("book", {"city": LONE}, tool_call_id="call-1")]),
    ],
    ids=["prompt", "text", "tool-args-key", "tool-args-value"],
)
def test_messages(message: Any) -> None:
    store = DjangoConversationStore()
    with transaction.atomic():  # the refusal leaves the caller's transaction usable
        assert refused(
            lambda: store.save_sync(Conversation(conversation_id="c-2", messages=[message]))
        ).field == ("message")
        store.save_sync(conversation("c-2", "fine"))
    assert store.load_sync("c-2") is not None


def test_deferred_tool_call_metadata() -> None:
    store = DjangoConversationStore()
    call = ToolCallPart("ask", {"q": "when?"}, tool_call_id="call-q")
    held = Conversation(
        conversation_id="c-3",
        messages=[ModelResponse(parts=[call])],
        deferred_tool_requests=DeferredToolRequests(calls=[call], metadata={"call-q": {"note": LONE}}),
    )
    assert refused(lambda: store.save_sync(held)).field == "deferred_tool_requests"
