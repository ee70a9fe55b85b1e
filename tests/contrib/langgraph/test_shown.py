"""A LangGraph answer binds to the question the person saw.

LangGraph re-runs the node from the stored state and applies the answer to whatever it asks
then. Each test edits the stored state with a raw ``UPDATE`` (Django's cursor, on the saver's
own table) between the answer and the continuation, and gives the row the MAC the saver would,
as a host's own code holding the app's key would: the continuation is refused and nothing runs.
(The same edit without the key is refused before that, by the row's MAC: test_attacks_at_rest.)
Unchanged, it continues; the review middleware's ``edit`` decision (the answer changing the
arguments on purpose) still applies.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from langchain_core.messages import AIMessage
from langgraph.types import Interrupt

from tests.contrib.langgraph.approvals import config, runs, single_question, start
from tests.contrib.langgraph.keyed_rows import rekey
from tests.contrib.langgraph.test_hitl import SENT, started
from tests.contrib.raw_edits import raw_update
from turnstate_app.contrib.langgraph import (
    DjangoCheckpointSaver,
    acontinue_graph,
    apause_interrupts,
    continue_graph,
    pause_interrupts,
)
from turnstate_app.contrib.langgraph.models import ChannelBlob, Checkpoint, CheckpointWrite
from turnstate_app.contrib.langgraph.start import start_of
from turnstate_app.models import Pause
from turnstate_app.pauses import aresume_pause, resume_pause
from turnstate_app.pauses.binding import identity_of, shown_mac
from turnstate_app.pauses.shown import shown_digest

pytestmark = pytest.mark.django_db(transaction=True)
CHANGED = "the question changed since it was asked"


def edit_interrupts(thread_id: str, change: Callable[[Any], Any]) -> None:
    """Rewrite the value of every interrupt stored for ``thread_id`` (the saver's pending writes)."""
    serde = DjangoCheckpointSaver().serde
    rows = CheckpointWrite.objects.filter(thread_id=thread_id, channel="__interrupt__")
    edited = 0
    for pk, kind, blob in rows.values_list("pk", "type", "blob"):
        interrupts = serde.loads_typed((kind, bytes(blob)))
        rewritten = type(interrupts)(Interrupt(value=change(i.value), id=i.id) for i in interrupts)
        raw_update(CheckpointWrite, pk, "blob", serde.dumps_typed(rewritten)[1])
        rekey(CheckpointWrite, pk=pk)
        edited += 1
    assert edited


def edit_last_ai_message(thread_id: str, change: Callable[[AIMessage], None]) -> None:
    """Rewrite the last AI message of the ``messages`` the thread's head holds: inside the head's
    checkpoint row when the value is small (the saver keeps it inline), else in its value row."""
    serde = DjangoCheckpointSaver().serde

    def edited(kind: str, data: bytes) -> bytes:
        messages = serde.loads_typed((kind, data))
        change(next(m for m in reversed(messages) if isinstance(m, AIMessage)))
        return bytes(serde.dumps_typed(messages)[1])

    head = Checkpoint.objects.filter(thread_id=thread_id, checkpoint_ns="").order_by("-checkpoint_id").first()
    assert head is not None
    body = serde.loads_typed((head.type, bytes(head.checkpoint)))
    inline = body["channel_values"]
    if "messages" in inline:
        kind, data = inline["messages"]
        inline["messages"] = [kind, edited(kind, bytes(data))]
        raw_update(Checkpoint, head.pk, "checkpoint", serde.dumps_typed(body)[1])
        rekey(Checkpoint, pk=head.pk)
        return
    version = str(body["channel_versions"]["messages"])
    row = ChannelBlob.objects.get(thread_id=thread_id, channel="messages", version=version)
    assert row.blob is not None
    raw_update(ChannelBlob, row.pk, "blob", edited(row.type, bytes(row.blob)))
    rekey(ChannelBlob, pk=row.pk)


def paused_question() -> tuple[Any, str, Any]:
    thread = f"shown-{uuid.uuid4().hex[:12]}"
    graph = single_question(DjangoCheckpointSaver())
    start(graph, thread)
    [minted] = pause_interrupts(graph, config(thread), run_id="r", session_id="s")
    return graph, thread, minted


def assert_refused(result: Any, jti: str) -> None:
    assert not result.ran and result.reason is not None and CHANGED in result.reason
    assert Pause.objects.continuation_failed().filter(jti=jti).exists()


def test_the_pause_records_the_keyed_digest_of_the_interrupts_value() -> None:
    _, _, minted = paused_question()
    [asked] = CheckpointWrite.objects.filter(
        thread_id=minted.claims.thread_id, checkpoint_id=minted.claims.checkpoint_id
    ).values_list("task_id", "idx", "channel")
    shown = {"question": {"question": "Go ahead?"}, "start": start_of([asked])}
    assert shown["start"]["writes"] == 1  # the interrupt's own write: no other node ran
    expected = shown_mac(identity_of(minted.claims), shown_digest(shown))
    assert Pause.objects.get(jti=minted.claims.jti).shown_digest == expected


def test_an_interrupt_whose_stored_value_changed_is_refused_and_its_node_does_not_run() -> None:
    graph, thread, minted = paused_question()
    resumed = resume_pause(minted.token, "yes")
    edit_interrupts(thread, lambda value: {"question": "Go ahead and pay EUR 9999?"})

    result = continue_graph(graph, resumed)

    assert_refused(result, minted.claims.jti)
    assert runs(thread, "ask") == 0 and runs(thread, "book") == 0
    assert [i.id for i in graph.get_state(config(thread)).interrupts] == [minted.claims.interrupt_id]


def test_an_unchanged_interrupt_continues_though_its_row_was_rewritten() -> None:
    graph, thread, minted = paused_question()
    resumed = resume_pause(minted.token, "yes")
    edit_interrupts(thread, lambda value: dict(value))  # the same question, written again

    result = continue_graph(graph, resumed)

    assert result.ran and runs(thread, "ask") == 1 and runs(thread, "book") == 1


async def test_the_async_twin_refuses_a_changed_question_too() -> None:
    thread = f"shown-{uuid.uuid4().hex[:12]}"
    graph = single_question(DjangoCheckpointSaver())
    await graph.ainvoke({"messages": [("user", "Book my trip.")], "log": []}, config(thread))
    [minted] = await apause_interrupts(graph, config(thread), run_id="r", session_id="s")
    resumed = await aresume_pause(minted.token, "yes")
    await sync_to_async(edit_interrupts)(thread, lambda value: {"question": "Go ahead, twice?"})

    result = await acontinue_graph(graph, resumed)

    assert not result.ran and result.reason is not None and CHANGED in result.reason
    assert await sync_to_async(runs)(thread, "ask") == 0


def test_a_batched_review_whose_tool_call_changed_in_the_stored_messages_is_refused() -> None:
    """The middleware re-reads the tool calls from the state's last AI message and runs those."""
    SENT.clear()
    graph, review = started("batched")
    thread = review["configurable"]["thread_id"]
    [minted] = pause_interrupts(graph, review, run_id="r", session_id="s")
    resumed = resume_pause(minted.token, {"decisions": [{"type": "approve"}, {"type": "approve"}]})

    def redirect(message: AIMessage) -> None:
        message.tool_calls[0]["args"]["to"] = "eve@example.com"

    edit_last_ai_message(thread, redirect)
    result = continue_graph(graph, resumed)

    assert_refused(result, minted.claims.jti)
    assert SENT == []


def test_a_per_call_review_whose_stored_arguments_changed_is_refused() -> None:
    SENT.clear()
    graph, review = started("per_call")
    thread = review["configurable"]["thread_id"]
    minted = {m.claims.tool_call_id: m for m in pause_interrupts(graph, review, run_id="r", session_id="s")}
    resumed = resume_pause(minted["call-1"].token, {"type": "approve"})

    def redirect(value: Any) -> Any:
        return (
            {**value, "args": {**value["args"], "to": "eve@example.com"}}
            if value["name"] == "send_email"
            else value
        )

    edit_interrupts(thread, redirect)
    result = continue_graph(graph, resumed)

    assert_refused(result, minted["call-1"].claims.jti)
    assert SENT == []


def test_a_batched_reviews_edit_decision_still_applies_the_persons_arguments() -> None:
    SENT.clear()
    graph, review = started("batched")
    [minted] = pause_interrupts(graph, review, run_id="r", session_id="s")
    edited = {"name": "send_email", "args": {"to": "bob@example.com", "body": "hi"}}
    answer = {"decisions": [{"type": "edit", "edited_action": edited}, {"type": "approve"}]}

    result = continue_graph(graph, resume_pause(minted.token, answer))

    assert result.ran and SENT == ["bob@example.com"]


def test_a_per_call_edit_decision_still_applies_the_persons_arguments() -> None:
    SENT.clear()
    graph, review = started("per_call")
    minted = {m.claims.tool_call_id: m for m in pause_interrupts(graph, review, run_id="r", session_id="s")}
    edited = {"name": "send_email", "args": {"to": "bob@example.com", "body": "hi"}}

    first = continue_graph(
        graph, resume_pause(minted["call-1"].token, {"type": "edit", "edited_action": edited})
    )
    last = continue_graph(graph, resume_pause(minted["call-2"].token, {"type": "approve"}))

    assert first.ran and last.ran and SENT == ["bob@example.com"]
