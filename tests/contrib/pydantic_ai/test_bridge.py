"""Deferred tool calls as one group of durable pauses; the run continues once, from the latest save."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from pydantic_ai.tools import DeferredToolRequests

from tests.contrib.pydantic_ai.agents import first_run, tool_runs, travel_agent
from tests.contrib.pydantic_ai.conversations import sync, turn
from turnstate_app.choices import ContinuationState
from turnstate_app.contrib.pydantic_ai import (
    ConversationNotSavedError,
    DjangoConversationStore,
    acontinue_agent,
    apause_deferred,
    continue_agent,
    pause_deferred,
)
from turnstate_app.errors import AnswerValidationError
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pauses import MintedPause, aresume_pause, redeliver, resume_pause

pytestmark = pytest.mark.django_db

APPROVE = {"approved": True}


def requested(pause: Pause) -> dict[str, Any]:
    """The request stored for ``pause`` (what GET pauses/<jti>/ shows)."""
    row = CheckpointMetadata.objects.get(
        thread_id=pause.thread_id, checkpoint_id=pause.checkpoint_id, key=pause.request_key
    )
    value: dict[str, Any] = json.loads(row.value)
    return value


def paused(
    conversation_id: str, **kwargs: Any
) -> tuple[Any, DjangoConversationStore, dict[str, MintedPause]]:
    """The travel agent's first run, saved and paused; its pauses by tool call id."""
    agent = travel_agent(follow_up=kwargs.pop("follow_up", False))
    store = DjangoConversationStore()
    result = first_run(agent, conversation_id)
    sync(store.save, result)
    minted = pause_deferred(
        result, store=store, run_id="run-1", session_id="session-1", agent=agent, **kwargs
    )
    return agent, store, {pause.claims.tool_call_id or "": pause for pause in minted}


def test_each_deferred_call_is_a_pause_of_one_group_on_the_saved_revision() -> None:
    _, store, pauses = paused("trip-1")
    record = sync(store.read_record, "trip-1")
    assert record is not None and record.deferred_tool_requests is not None
    assert list(pauses) == ["call-book", "call-date"]  # approvals first, then the other calls
    rows = {row.tool_call_id: row for row in Pause.objects.all()}
    assert {row.group for row in rows.values()} == {rows["call-book"].group} and rows["call-book"].group
    for pause in pauses.values():
        assert pause.resumable
        assert pause.claims.thread_id == "trip-1"
        assert pause.claims.checkpoint_id == record.revision
    resumed_book = resume_pause(pauses["call-book"].token, APPROVE)
    resumed_date = resume_pause(pauses["call-date"].token, "May 3rd")
    assert resumed_book.checkpoint is not None and resumed_date.checkpoint is not None
    # The group's transcript is kept once: with its first member only.
    assert len(resumed_book.checkpoint.messages) == 2
    assert resumed_date.checkpoint.messages == []


def test_the_request_says_what_is_asked_and_what_may_be_answered() -> None:
    _, _, pauses = paused("trip-2")
    book = Pause.objects.get(tool_call_id="call-book")
    date = Pause.objects.get(tool_call_id="call-date")
    request = requested(book)
    assert request["tool_name"] == "book_flight" and request["kind"] == "approval"
    assert request["args"] == {"destination": "Lisbon", "seats": 2}
    assert request["parameters_json_schema"]["required"] == ["destination", "seats"]
    question = requested(date)
    assert question["kind"] == "question" and question["metadata"] == {"question": "Which date?"}
    assert question["conversation_id"] == "trip-2"
    assert pauses["call-date"].claims.name == "ask_date"


def test_a_run_not_saved_in_the_store_cannot_pause() -> None:
    agent = travel_agent()
    store = DjangoConversationStore()
    result = first_run(agent, "trip-3")
    with pytest.raises(ConversationNotSavedError):
        pause_deferred(result, store=store, run_id="r", session_id="s")
    sync(store.save, result)
    later = sync(store.load, "trip-3")
    assert later is not None
    later.messages += turn("meanwhile")
    sync(store.save, later)  # saved again since: the run's revision is gone
    with pytest.raises(ConversationNotSavedError):
        pause_deferred(result, store=store, run_id="r", session_id="s")
    assert Pause.objects.count() == 0


def test_the_group_continues_only_when_complete_and_only_once() -> None:
    agent, store, pauses = paused("trip-4")
    first = resume_pause(pauses["call-date"].token, "May 3rd")
    waiting = continue_agent(agent, first, store=store)
    assert (waiting.ran, waiting.reason) == (False, "group incomplete")
    assert tool_runs("book_flight") == 0

    last = resume_pause(pauses["call-book"].token, APPROVE)
    done = continue_agent(agent, last, store=store)
    assert done.ran and done.minted == []
    assert done.output == "done. ask_date: May 3rd; book_flight: booked 2 to Lisbon"
    assert tool_runs("book_flight") == 1
    stored = sync(store.load, "trip-4")
    assert stored is not None and stored.deferred_tool_requests is None
    assert stored.messages[-1].parts[0].content == done.output  # type: ignore[union-attr]

    for redelivered in (last, first, last):
        again = continue_agent(agent, redelivered, store=store)
        assert not again.ran and again.reason == "already continued"
    assert tool_runs("book_flight") == 1


def test_an_invalid_approval_leaves_the_pause_pending() -> None:
    agent, store, pauses = paused("trip-5")
    token = pauses["call-book"].token
    for wrong in (
        {"approved": "yes"},
        {"approved": True, "override_args": {"seats": "two"}},
        "ok",
        {"ok": True},
    ):
        with pytest.raises(AnswerValidationError):
            resume_pause(token, wrong)
        assert Pause.objects.get(tool_call_id="call-book").status == "pending"
    resume_pause(pauses["call-date"].token, "June")
    last = resume_pause(token, {"approved": True, "override_args": {"destination": "Porto", "seats": 1}})
    done = continue_agent(agent, last, store=store)
    assert done.ran and "booked 1 to Porto" in done.output
    assert tool_runs("book_flight") == 1


def test_a_denied_call_does_not_run_and_the_model_hears_why() -> None:
    agent, store, pauses = paused("trip-6")
    resume_pause(pauses["call-date"].token, "June")
    last = resume_pause(pauses["call-book"].token, {"approved": False, "message": "too pricey"})
    done = continue_agent(agent, last, store=store)
    assert done.ran and "book_flight: too pricey" in done.output
    assert tool_runs("book_flight") == 0


def test_a_call_no_longer_deferred_in_the_latest_conversation_runs_nothing() -> None:
    agent, store, pauses = paused("trip-7")
    record = sync(store.read_record, "trip-7")
    assert record is not None
    sync(store.branch, "trip-7", at=1, expected_revision=record.revision)  # someone moved the conversation on
    resume_pause(pauses["call-date"].token, "June")
    last = resume_pause(pauses["call-book"].token, APPROVE)
    result = continue_agent(agent, last, store=store)
    assert not result.ran and result.reason is not None and "no longer deferred" in result.reason
    moved = sync(store.read_record, "trip-7")
    assert moved is not None and f"revision {moved.revision} waits on no tool call" in result.reason
    assert tool_runs("book_flight") == 0
    pause = Pause.objects.get(jti=last.claims.jti)
    assert (pause.continuation, pause.continuation_reason) == (ContinuationState.REFUSED, result.reason)
    assert not continue_agent(agent, last, store=store).ran


def test_owners_each_answer_their_own_and_the_next_pause_keeps_the_continued_owner() -> None:
    users = get_user_model().objects
    alice, bob = users.create_user("alice"), users.create_user("bob")
    agent, store, pauses = paused("trip-8", owner=alice, owners={"call-book": bob}, follow_up=True)
    owners = dict(Pause.objects.values_list("tool_call_id", "owner__username"))
    assert owners == {"call-date": "alice", "call-book": "bob"}
    from django.core.exceptions import PermissionDenied

    with pytest.raises(PermissionDenied):
        resume_pause(pauses["call-book"].token, APPROVE, user=alice)
    resume_pause(pauses["call-date"].token, "June", user=alice)
    last = resume_pause(pauses["call-book"].token, APPROVE, user=bob)
    done = continue_agent(agent, last, store=store)
    assert done.ran and isinstance(done.output, DeferredToolRequests)
    [insurance] = done.minted
    assert insurance.claims.tool_call_id == "call-ins" and insurance.resumable
    assert Pause.objects.get(jti=insurance.claims.jti).owner == bob
    final = continue_agent(agent, resume_pause(insurance.token, APPROVE, user=bob), store=store)
    assert final.ran and "insured Lisbon" in final.output
    assert (tool_runs("book_flight"), tool_runs("buy_insurance")) == (1, 1)


@pytest.mark.django_db(transaction=True)
async def test_the_async_twins_pause_and_continue() -> None:
    agent = travel_agent()
    store = DjangoConversationStore()
    from pydantic_ai.conversation import Conversation

    result = await agent.run("Book me two seats.", conversation=Conversation(conversation_id="trip-9"))
    await store.save(result)
    minted = await apause_deferred(result, store=store, run_id="r", session_id="s", agent=agent)
    by_call = {pause.claims.tool_call_id: pause for pause in minted}
    await aresume_pause(by_call["call-date"].token, "July")
    last = await aresume_pause(by_call["call-book"].token, APPROVE)
    done = await acontinue_agent(agent, last, store=store)
    assert done.ran and "booked 2 to Lisbon" in done.output
    assert not (await acontinue_agent(agent, last, store=store)).ran


HANDLED: list[Any] = []


def continue_then_lose_the_ack(resumed: Any) -> None:
    """A worker's handler: continues the run, then fails to report it the first time it ran."""
    result = continue_agent(travel_agent(), resumed, store=DjangoConversationStore())
    HANDLED.append((result.ran, result.reason))
    if result.ran and sum(ran for ran, _ in HANDLED) == 1:
        raise ConnectionError("the worker died before acknowledging")


@pytest.mark.django_db(transaction=True)
def test_a_redelivered_answer_runs_the_approved_tool_once(turnstate_settings: dict[str, Any]) -> None:
    HANDLED.clear()
    turnstate_settings["RESUME_HANDLER"] = f"{__name__}.continue_then_lose_the_ack"
    _, _, pauses = paused("trip-10")
    resume_pause(pauses["call-date"].token, "June")
    last = resume_pause(pauses["call-book"].token, APPROVE)
    assert HANDLED == [(False, "group incomplete"), (True, None)]
    # The acknowledgement was lost, and the ledger knows the run continued: nothing awaits a hand-off.
    book = Pause.objects.get(jti=pauses["call-book"].claims.jti)
    assert book.handed_off_at is None and book.continuation == ContinuationState.CONTINUED
    assert set(Pause.objects.values_list("continuation", flat=True)) == {ContinuationState.CONTINUED}
    assert Pause.objects.awaiting_handoff().count() == 0

    assert redeliver().delivered == 0  # turnstate_redeliver hands it no more,
    assert redeliver(jti=last.claims.jti).listed == ()  # not even when named
    continue_then_lose_the_ack(last)  # a queue that delivers the lost message again all the same
    assert HANDLED[2:] == [(False, "already continued")]
    assert tool_runs("book_flight") == 1
