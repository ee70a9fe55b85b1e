"""No table of the app holds a person's words in the clear once keys are set: a raw SELECT over all.

A mint and a resume (the store), a LangGraph graph run through the saver (checkpoints, channel
values, pending writes), a PydanticAI run saved in the store (entries, deferred calls), an OpenAI
Agents run paused and continued on a ``DjangoSession`` (run state, session items): then every
column of every turnstate table is read back without the app, and the secret is nowhere.
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
from tests.contrib.openai_agents.agents import payments_agent, tool_runs
from tests.encryption_support import KEY_A, KEY_B, RING, SECRET, mint_secret
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver, pause_interrupts
from turnstate_app.contrib.langgraph.errors import UnreadableCheckpointError
from turnstate_app.contrib.langgraph.operators import orphans
from turnstate_app.contrib.openai_agents import (
    DjangoSession,
    UnreadableRunStateError,
    UnreadableSessionItemError,
    continue_run,
    pause_approvals,
)
from turnstate_app.contrib.openai_agents.models import StoredRunState, StoredSessionItem
from turnstate_app.contrib.openai_agents.states import read_state
from turnstate_app.contrib.pydantic_ai import DjangoConversationStore
from turnstate_app.contrib.pydantic_ai.errors import UnreadableConversationError
from turnstate_app.contrib.pydantic_ai.models import StoredConversation
from turnstate_app.encryption import key_id_of
from turnstate_app.models import CheckpointMetadata
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
    assert f"My passport is {SECRET}" in text and f'"passport": "{SECRET}"' in text.replace("&quot;", '"')
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_B]
    page = admin_client.get(f"/admin/turnstate_pydantic_ai/storedconversation/{pk}/change/")
    assert page.status_code == 200 and "unreadable" in page.content.decode()
    assert SECRET not in page.content.decode()


# -- the OpenAI Agents SDK: run states and session items ------------------------------------------

APPROVE = {"approved": True}


def run_openai(session_id: str, *, run_id: str | None = None) -> Any:
    """A payments run on ``session_id`` told the secret, paused for its two approvals, answered and
    continued once; then one more item added to the session by hand. Its final output."""
    from agents import Runner

    agent = payments_agent()
    session = DjangoSession(session_id)
    result = Runner.run_sync(agent, f"My passport is {SECRET}. Pay acme 2400 and tell bob.", session=session)
    pauses = pause_approvals(result, agent=agent, run_id=run_id or f"run-{session_id}", session_id=session_id)
    answered = [resume_pause(minted.token, APPROVE) for minted in pauses]
    done = continue_run(payments_agent(), answered[-1])
    assert done.ran
    session.add_items_sync([{"role": "user", "content": f"and my passport is still {SECRET}"}])
    return done.output


def paused_openai(session_id: str, run_id: str) -> list[Any]:
    """A payments run on ``session_id`` told the secret, paused for its two approvals (not answered)."""
    from agents import Runner

    agent = payments_agent()
    session = DjangoSession(session_id)
    result = Runner.run_sync(agent, f"My passport is {SECRET}. Pay acme 2400 and tell bob.", session=session)
    return pause_approvals(result, agent=agent, run_id=run_id, session_id=session_id)


def oai_key_ids() -> set[str | None]:
    """The key id of every OpenAI Agents value row (state rows and session items)."""
    return set(StoredRunState.objects.values_list("encryption_key_id", flat=True)) | set(
        StoredSessionItem.objects.values_list("encryption_key_id", flat=True)
    )


def test_no_openai_agents_row_holds_a_secret_after_a_paused_and_continued_run(
    turnstate_settings: dict[str, Any],
) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    output = run_openai("oai-1")
    assert raw_hits(SECRET) == []
    assert StoredRunState.objects.exists() and StoredSessionItem.objects.count() > 3
    assert oai_key_ids() == {key_id_of(KEY_A)}
    # Everything reads back as written, and as the SDK wrote it.
    assert "done." in output and tool_runs("pay") == ["2400 to acme"]
    items = DjangoSession("oai-1").get_items_sync()
    assert items[0]["content"] == f"My passport is {SECRET}. Pay acme 2400 and tell bob."
    assert items[-1] == {"role": "user", "content": f"and my passport is still {SECRET}"}
    assert DjangoSession("oai-1").pop_item_sync() == items[-1]
    stored = read_state("run-oai-1")
    assert stored is not None and SECRET in stored.text


def test_openai_agents_rows_written_clear_are_encrypted_by_rotation_then_moved_to_a_new_first_key(
    turnstate_settings: dict[str, Any],
) -> None:
    run_openai("oai-2")
    assert {hit.split(".")[0] for hit in raw_hits(SECRET)} >= {
        StoredRunState._meta.db_table,
        StoredSessionItem._meta.db_table,
    }  # before encryption was turned on
    assert oai_key_ids() == {None}
    items = DjangoSession("oai-2").get_items_sync()
    state = read_state("run-oai-2")
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    assert DjangoSession("oai-2").get_items_sync() == items  # clear rows stay readable
    out = io.StringIO()
    call_command("turnstate_rotate_keys", stdout=out)
    assert raw_hits(SECRET) == [] and oai_key_ids() == {key_id_of(KEY_A)}
    assert "turnstate_openai_agents.StoredSessionItem.item" in out.getvalue()
    assert "turnstate_openai_agents.StoredRunState.state" in out.getvalue()
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_B, KEY_A]
    call_command("turnstate_rotate_keys", stdout=io.StringIO())
    assert raw_hits(SECRET) == [] and oai_key_ids() == {key_id_of(KEY_B)}
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_B]
    assert DjangoSession("oai-2").get_items_sync() == items
    assert read_state("run-oai-2") == state


def test_a_missing_key_makes_the_openai_agents_rows_unreadable_listed_never_plaintext_or_a_crash(
    turnstate_settings: dict[str, Any],
) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    paused_openai("oai-3", "run-oai-3")
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_B]
    session = DjangoSession("oai-3")
    count = StoredSessionItem.objects.filter(session_id="oai-3").count()
    with pytest.raises(UnreadableSessionItemError) as item_error:
        session.get_items_sync()
    with pytest.raises(UnreadableSessionItemError):
        session.pop_item_sync()
    assert StoredSessionItem.objects.filter(session_id="oai-3").count() == count  # kept
    with pytest.raises(UnreadableRunStateError) as state_error:
        read_state("run-oai-3")
    assert SECRET not in str(item_error.value) + str(state_error.value)
    out = io.StringIO()
    call_command("turnstate_rotate_keys", "--dry-run", stdout=out)
    text = out.getvalue()
    assert "turnstate_openai_agents.StoredRunState.state:" in text
    assert "turnstate_openai_agents.StoredSessionItem.item:" in text
    assert "thread='oai-3'" in text and SECRET not in text


def test_a_run_whose_state_does_not_decrypt_is_refused_and_listed_unresumable_never_a_crash(
    turnstate_settings: dict[str, Any],
) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    pauses = paused_openai("oai-4", "run-oai-4")
    row = StoredRunState.objects.get(run_id="run-oai-4")
    altered = row.state[:-8] + ("A" if row.state[-8] != "A" else "B") + row.state[-7:]
    StoredRunState.objects.filter(pk=row.pk).update(state=altered)  # altered at rest
    first = resume_pause(pauses[0].token, APPROVE)
    early = continue_run(payments_agent(), first)
    assert not early.ran
    unresumable: list[Any] = list(CheckpointMetadata.objects.unresumable())
    listed = {row.jti: row.reason for row in unresumable}
    assert "cannot be read" in listed[pauses[1].claims.jti] and SECRET not in listed[pauses[1].claims.jti]
    last = resume_pause(pauses[1].token, APPROVE)
    result = continue_run(payments_agent(), last)
    assert not result.ran and "cannot be read" in (result.reason or "")
    assert SECRET not in (result.reason or "") and tool_runs("pay") == []


def test_a_tenants_dropped_keys_shred_its_openai_agents_session_and_state_only(
    turnstate_settings: dict[str, Any],
) -> None:
    RING.clear()
    RING.update({"acme": [KEY_A], "globex": [KEY_B]})
    turnstate_settings["ENCRYPTION_KEY_RING"] = "tests.encryption_support.ring"
    try:
        for tenant in ("acme", "globex"):
            run_openai(f"{tenant}/session", run_id=f"run-{tenant}")
        assert StoredRunState.objects.get(run_id="run-acme").encryption_key_id == key_id_of(KEY_A)
        assert StoredRunState.objects.get(run_id="run-globex").encryption_key_id == key_id_of(KEY_B)
        del RING["acme"]
        with pytest.raises(UnreadableSessionItemError):
            DjangoSession("acme/session").get_items_sync()
        with pytest.raises(UnreadableRunStateError):
            read_state("run-acme")
        assert DjangoSession("globex/session").get_items_sync()
        assert read_state("run-globex") is not None
        assert raw_hits(SECRET) == []
    finally:
        RING.clear()


def test_staff_see_the_openai_agents_values_decrypted_or_unreadable_in_the_admin(
    turnstate_settings: dict[str, Any], admin_client: Any
) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    paused_openai("oai-5", "run-oai-5")
    state = StoredRunState.objects.get(run_id="run-oai-5")
    item = StoredSessionItem.objects.filter(session_id="oai-5").order_by("pk").first()
    assert item is not None
    pages = [
        f"/admin/turnstate_openai_agents/storedrunstate/{state.pk}/change/",
        f"/admin/turnstate_openai_agents/storedsessionitem/{item.pk}/change/",
    ]
    for url in pages:
        page = admin_client.get(url)
        assert page.status_code == 200 and SECRET in page.content.decode()
        assert key_id_of(KEY_A) in page.content.decode()
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_B]
    for url in pages:
        page = admin_client.get(url)
        assert page.status_code == 200 and "unreadable" in page.content.decode()
        assert SECRET not in page.content.decode()
    for url in (
        "/admin/turnstate_openai_agents/storedrunstate/",
        "/admin/turnstate_openai_agents/storedsessionitem/",
    ):
        assert admin_client.get(url).status_code == 200


def test_encrypting_the_openai_agents_values_adds_no_statement(turnstate_settings: dict[str, Any]) -> None:
    from django.test.utils import CaptureQueriesContext

    from turnstate_app.contrib.openai_agents.states import insert_state, replace_state

    def statements(session_id: str) -> list[int]:
        session = DjangoSession(session_id)
        counts = []
        for call in (
            lambda: session.add_items_sync([{"role": "user", "content": SECRET}] * 3),
            lambda: session.get_items_sync(),
            lambda: session.get_items_sync(limit=2),
            lambda: session.pop_item_sync(),
        ):
            with CaptureQueriesContext(connection) as captured:
                call()
            counts.append(len(captured.captured_queries))
        revision = insert_state(
            run_id=f"run-{session_id}",
            thread_id=session_id,
            session_id=session_id,
            agent="payments",
            schema_version="1",
            text=SECRET,
        )
        with CaptureQueriesContext(connection) as captured:
            replace_state(f"run-{session_id}", SECRET, expected_revision=revision, thread_id=session_id)
        with CaptureQueriesContext(connection) as read:
            assert read_state(f"run-{session_id}") is not None
        return [*counts, len(captured.captured_queries), len(read.captured_queries)]

    clear = statements("oai-clear")
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    assert statements("oai-sealed") == clear
    assert oai_key_ids() == {None, key_id_of(KEY_A)}
