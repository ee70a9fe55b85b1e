"""The conversations page: read-only, searchable, and a page costs the same queries at any size."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.tools import DeferredToolRequests

from tests.contrib.pydantic_ai.conversations import conversation, sync
from tests.pause_helpers import mint
from turnstate_app.contrib.pydantic_ai import DjangoConversationStore
from turnstate_app.contrib.pydantic_ai.models import StoredConversation
from turnstate_app.models import Pause

pytestmark = pytest.mark.django_db

PAGE = "/admin/turnstate_pydantic_ai/storedconversation/"


def shown_block(page: str, field: str) -> str:
    """The text of the ``<pre>`` a read-only field of a change page shows, as the page holds it."""
    row = page.split(f'class="form-row field-{field}', 1)[1]
    return row.split('<pre class="turnstate-value">', 1)[1].split("</pre>", 1)[0]


def make_conversations(first: int, n: int) -> None:
    store = DjangoConversationStore()
    for i in range(first, first + n):
        conv = conversation(f"conv-{i}", "hello", "again")
        if i % 2 == 0:  # half wait on a deferred call, and a pause stands for it
            call = ToolCallPart("approve", {"amount": i}, tool_call_id=f"call-{i}")
            conv.messages.append(ModelResponse(parts=[call]))
            conv.deferred_tool_requests = DeferredToolRequests(approvals=[call])
            mint(thread_id=f"conv-{i}")
        sync(store.save, conv, scope=f"user-{i % 3}")


def test_the_page_costs_the_same_queries_at_two_sizes(
    admin_client: Client, django_assert_max_num_queries: Any
) -> None:
    make_conversations(0, 3)
    with CaptureQueriesContext(connection) as small:
        response = admin_client.get(PAGE)
    small_page = len(small.captured_queries)  # before the next request resets Django's query log
    assert response.status_code == 200
    rows = {row.conversation_id: row for row in response.context["cl"].result_list}
    assert set(rows) == {"conv-0", "conv-1", "conv-2"}
    assert rows["conv-0"].pending_pauses == 1 and rows["conv-1"].pending_pauses == 0
    assert b"conv-2" in response.content
    # A pause past its age, still marked pending, can no longer be answered: not counted.
    Pause.objects.filter(thread_id="conv-0").update(expires_at=timezone.now() - timedelta(seconds=1))
    response = admin_client.get(PAGE)
    assert {row.conversation_id: row.pending_pauses for row in response.context["cl"].result_list}[
        "conv-0"
    ] == 0
    make_conversations(3, 40)
    with django_assert_max_num_queries(small_page):
        response = admin_client.get(PAGE)
    assert len(response.context["cl"].result_list) == 43


def test_search_finds_by_conversation_id_and_by_scope(admin_client: Client) -> None:
    make_conversations(0, 6)
    by_id = admin_client.get(PAGE, {"q": "conv-4"}).context["cl"].result_list
    assert [row.conversation_id for row in by_id] == ["conv-4"]
    by_scope = admin_client.get(PAGE, {"q": "user-1"}).context["cl"].result_list
    assert sorted(row.conversation_id for row in by_scope) == ["conv-1", "conv-4"]


def test_a_conversation_page_shows_its_transcript_and_nothing_can_be_changed(admin_client: Client) -> None:
    make_conversations(0, 1)
    row = StoredConversation.objects.get()
    response = admin_client.get(f"{PAGE}{row.pk}/change/")
    assert response.status_code == 200
    assert b"q-hello" in response.content and b"a-again" in response.content
    assert admin_client.get(f"{PAGE}add/").status_code == 403
    assert admin_client.post(f"{PAGE}{row.pk}/delete/", {"post": "yes"}).status_code == 403
    assert StoredConversation.objects.count() == 1


def test_the_json_fields_are_indented_in_a_scrolling_block_and_escaped(admin_client: Client) -> None:
    conv = conversation("conv-json", "<b>hello</b>")
    call = ToolCallPart(
        "approve", {"amount": 1, "note": "<img src=x onerror=alert(1)>"}, tool_call_id="c-json"
    )
    conv.messages.append(ModelResponse(parts=[call]))
    conv.deferred_tool_requests = DeferredToolRequests(approvals=[call])
    sync(DjangoConversationStore().save, conv, scope="user-json")
    row = StoredConversation.objects.get()

    page = admin_client.get(f"{PAGE}{row.pk}/change/").content.decode()

    for field in ("shown_usage", "waiting_on", "transcript", "shown_branches"):
        block = shown_block(page, field)
        assert block.startswith(("{\n", "[\n", "[]")), (field, block[:80])
    assert "\n  &quot;input_tokens&quot;: " in shown_block(page, "shown_usage")
    assert "&lt;img src=x onerror=alert(1)&gt;" in shown_block(page, "waiting_on")
    assert "&lt;b&gt;hello&lt;/b&gt;" in shown_block(page, "transcript")
    assert "<img src=x" not in page and "<b>hello" not in page
