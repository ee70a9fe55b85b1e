"""No table of the app holds a person's words in the clear once keys are set: a raw SELECT over all.

A mint and a resume (the store), a LangGraph graph run through the saver (checkpoints, channel
values, pending writes), a PydanticAI run saved in the store (entries, deferred calls): then
every column of every turnstate table is read back without the app, and the secret is nowhere.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection
from langgraph.types import Command
from pydantic_ai import Agent
from pydantic_ai.conversation import Conversation
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests

from tests.contrib.langgraph.graphs import config, trip_graph
from tests.encryption_support import KEY_A, KEY_B, RING, SECRET, mint_secret
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver, pause_interrupts
from turnstate_app.contrib.langgraph.errors import UnreadableCheckpointError
from turnstate_app.contrib.langgraph.operators import orphans
from turnstate_app.contrib.pydantic_ai import DjangoConversationStore
from turnstate_app.contrib.pydantic_ai.errors import UnreadableConversationError
from turnstate_app.contrib.pydantic_ai.models import StoredConversation
from turnstate_app.pauses import resume_pause

pytestmark = pytest.mark.django_db(transaction=True)

BIG = SECRET + "-" + "x" * 5000  # past the saver's inline limit: a row of the channel-value table


def raw_hits(secret: str) -> list[str]:
    """``table.column`` of every cell of every turnstate table holding ``secret`` (text or bytes)."""
    hits = []
    tables = [m._meta.db_table for m in apps.get_models() if m._meta.db_table.startswith("turnstate")]
    quote = connection.ops.quote_name
    for table in sorted(set(tables)):
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT * FROM {quote(table)}")
            names = [column[0] for column in cursor.description]
            for row in cursor.fetchall():
                for name, cell in zip(names, row, strict=True):
                    data = (
                        bytes(cell)
                        if isinstance(cell, bytes | bytearray | memoryview)
                        else str(cell).encode()
                    )
                    if secret.encode() in data:
                        hits.append(f"{table}.{name}")
    return sorted(set(hits))


def run_graph(thread: str) -> Any:
    graph = trip_graph(DjangoCheckpointSaver(), name="trips")
    graph.invoke({"transcript": [BIG]}, config(thread))
    return graph.invoke(Command(resume=f"the day after {SECRET}"), config(thread))


def booking_agent() -> Agent[None, str | DeferredToolRequests]:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("book", {"passport": SECRET}, tool_call_id="call-1")])
        return ModelResponse(parts=[TextPart("done")])

    agent: Agent[None, str | DeferredToolRequests] = Agent(
        FunctionModel(model), output_type=[str, DeferredToolRequests], name="booker"
    )

    @agent.tool_plain(requires_approval=True)
    def book(passport: str) -> str:
        return "booked"

    return agent


def run_agent(conversation_id: str) -> DjangoConversationStore:
    store = DjangoConversationStore()
    result = booking_agent().run_sync(
        f"My passport is {SECRET}", conversation=Conversation(conversation_id=conversation_id)
    )
    store.save_sync(result)
    return store


def test_no_table_holds_a_secret_after_a_mint_a_resume_a_graph_run_and_an_agent_run(
    turnstate_settings: dict[str, Any],
) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    minted = mint_secret()
    resume_pause(minted.token, {"passport": SECRET})
    output = run_graph("graph-1")
    store = run_agent("chat-1")
    assert raw_hits(SECRET) == []
    # Everything reads back as written.
    assert output["transcript"][0] == BIG and output["answer"] == f"the day after {SECRET}"
    loaded = store.load_sync("chat-1")
    assert loaded is not None and loaded.deferred_tool_requests is not None
    assert loaded.deferred_tool_requests.approvals[0].args == {"passport": SECRET}


def test_without_keys_the_same_runs_are_stored_clear_and_stay_readable_once_keys_are_set(
    turnstate_settings: dict[str, Any],
) -> None:
    run_graph("graph-2")
    run_agent("chat-2")
    assert raw_hits(SECRET)  # before encryption was turned on
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    graph = trip_graph(DjangoCheckpointSaver(), name="trips")
    assert graph.get_state(config("graph-2")).values["transcript"][0] == BIG
    assert DjangoConversationStore().load_sync("chat-2") is not None
    call_command("turnstate_rotate_keys", stdout=io.StringIO())
    assert raw_hits(SECRET) == []
    assert graph.get_state(config("graph-2")).values["transcript"][0] == BIG
    loaded = DjangoConversationStore().load_sync("chat-2")
    assert loaded is not None and f"My passport is {SECRET}" in str(loaded.messages[0])


def test_a_missing_key_makes_the_integrations_rows_unreadable_never_plaintext(
    turnstate_settings: dict[str, Any],
) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    run_graph("graph-3")
    run_agent("chat-3")
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_B]
    with pytest.raises(UnreadableCheckpointError) as graph_error:
        DjangoCheckpointSaver().get_tuple(config("graph-3"))
    with pytest.raises(UnreadableConversationError) as agent_error:
        DjangoConversationStore().load_sync("chat-3")
    assert SECRET not in str(graph_error.value) + str(agent_error.value)
    out = io.StringIO()
    call_command("turnstate_rotate_keys", "--dry-run", stdout=out)
    listed = out.getvalue()
    assert "turnstate_langgraph.Checkpoint.checkpoint:" in listed and "thread='graph-3'" in listed
    assert "thread='chat-3'" in listed


def test_a_pause_of_a_thread_whose_key_is_gone_is_listed_as_stranded_not_a_crash(
    turnstate_settings: dict[str, Any],
) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    graph = trip_graph(DjangoCheckpointSaver(), name="trips")
    graph.invoke({"transcript": [SECRET]}, config("graph-4"))
    [pause] = pause_interrupts(graph, config("graph-4"), run_id="r", session_id="s")
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_B]
    [found] = [o for o in orphans() if o.thread_id == "graph-4"]
    assert (
        found.kind == "stranded_pause" and found.jti == pause.claims.jti and "cannot be read" in found.reason
    )
    out = io.StringIO()
    call_command("turnstate_langgraph_orphans", "--json", stdout=out)
    assert pause.claims.jti in out.getvalue() and SECRET not in out.getvalue()


def test_a_tenants_dropped_keys_shred_its_graph_and_its_conversations_only(
    turnstate_settings: dict[str, Any],
) -> None:
    RING.clear()
    RING.update({"acme": [KEY_A], "globex": [KEY_B]})
    turnstate_settings["ENCRYPTION_KEY_RING"] = "tests.encryption_support.ring"
    try:
        for tenant in ("acme", "globex"):
            run_graph(f"{tenant}/graph")
            run_agent(f"{tenant}/chat")
        del RING["acme"]
        with pytest.raises(UnreadableCheckpointError):
            DjangoCheckpointSaver().get_tuple(config("acme/graph"))
        with pytest.raises(UnreadableConversationError):
            DjangoConversationStore().load_sync("acme/chat")
        assert DjangoCheckpointSaver().get_tuple(config("globex/graph")) is not None
        assert DjangoConversationStore().load_sync("globex/chat") is not None
        assert raw_hits(SECRET) == []
    finally:
        RING.clear()


def test_staff_see_the_integrations_values_decrypted_in_the_admin(
    turnstate_settings: dict[str, Any], admin_client: Any
) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    run_agent("chat-5")
    pk = StoredConversation.objects.get(conversation_id="chat-5").pk
    page = admin_client.get(f"/admin/turnstate_pydantic_ai/storedconversation/{pk}/change/")
    assert page.status_code == 200
    text = page.content.decode()
    assert f"My passport is {SECRET}" in text and f'"passport":"{SECRET}"' in text.replace("&quot;", '"')
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_B]
    page = admin_client.get(f"/admin/turnstate_pydantic_ai/storedconversation/{pk}/change/")
    assert page.status_code == 200 and "unreadable" in page.content.decode()
    assert SECRET not in page.content.decode()
