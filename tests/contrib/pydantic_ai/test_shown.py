"""A PydanticAI approval binds to the tool call the person saw.

PydanticAI continues a deferred run from the stored conversation and executes the calls its
last response holds, with the arguments stored there. Each test edits that stored message with
an ``UPDATE`` behind the store's API (the ORM, on the store's own table) between the answers and the
continuation, its row's MAC recomputed as the app's own code would write it: the history the
group's first pause recorded no longer matches, the group's continuation is refused, naming the
message, and no tool runs. Unchanged, it continues;
``override_args`` (the person changing the arguments on purpose) still applies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from pydantic_ai.conversation import Conversation

from tests.contrib.pydantic_ai.agents import first_run, tool_runs, travel_agent
from tests.contrib.pydantic_ai.conversations import sync
from tests.contrib.pydantic_ai.rows import Args, calling_entry, edited_call, entry_mac, rewrite_entry
from turnstate_app.contrib.pydantic_ai import (
    DjangoConversationStore,
    acontinue_agent,
    apause_deferred,
    continue_agent,
    pause_deferred,
)
from turnstate_app.contrib.pydantic_ai.start import start_of, transcript
from turnstate_app.models import Pause
from turnstate_app.pauses import MintedPause, aresume_pause, resume_pause
from turnstate_app.pauses.binding import identity_of, shown_mac
from turnstate_app.pauses.shown import shown_digest

pytestmark = pytest.mark.django_db
CHANGED = "message 2 of 2 (a model response) is not the one recorded then"
APPROVE = {"approved": True}


def paused(conversation_id: str) -> tuple[Any, DjangoConversationStore, dict[str, MintedPause]]:
    agent = travel_agent()
    store = DjangoConversationStore()
    result = first_run(agent, conversation_id)
    sync(store.save, result)
    minted = pause_deferred(result, store=store, run_id="run-1", session_id="session-1", agent=agent)
    return agent, store, {pause.claims.tool_call_id or "": pause for pause in minted}


def edit_stored_call(conversation_id: str, call_id: str, change: Callable[[Args], Args]) -> None:
    """Rewrite the arguments of ``call_id`` in the stored response that made it, as the app's own
    code would (its MAC recomputed with the app's key): only the binding to what was shown is left
    to refuse it (an edit without the key is refused by the row's MAC: ``test_attacks_at_rest``)."""
    entry = calling_entry(conversation_id, call_id)
    message = edited_call(entry, call_id, change)
    rewrite_entry(entry, message, mac=entry_mac(entry, None, message))


def test_each_pause_records_the_digest_of_its_tool_and_arguments() -> None:
    _, _, pauses = paused("shown-1")
    book = Pause.objects.get(jti=pauses["call-book"].claims.jti)
    asked = Pause.objects.get(jti=pauses["call-date"].claims.jti)
    conversation = sync(DjangoConversationStore().load, "shown-1")
    assert conversation is not None
    start = start_of(transcript(conversation), conversation.deferred_tool_requests)
    assert start["messages"] == 2
    expected = {"tool_name": "book_flight", "args": {"destination": "Lisbon", "seats": 2}, "start": start}
    assert book.shown_digest == shown_mac(identity_of(book), shown_digest(expected))
    asked_digest = shown_digest(
        {"tool_name": "ask_date", "args": {"question": "Which date?"}, "start": start}
    )
    assert asked.shown_digest == shown_mac(identity_of(asked), asked_digest)


def test_an_approved_call_whose_stored_arguments_changed_is_refused_and_no_tool_runs() -> None:
    agent, store, pauses = paused("shown-2")
    resume_pause(pauses["call-date"].token, "May 3rd")
    last = resume_pause(pauses["call-book"].token, APPROVE)
    edit_stored_call("shown-2", "call-book", lambda args: {**args, "seats": 9})

    result = continue_agent(agent, last, store=store)

    assert not result.ran and result.reason is not None and CHANGED in result.reason
    assert pauses["call-book"].claims.jti in result.reason
    assert tool_runs("book_flight") == 0
    refused = {p.jti for p in Pause.objects.continuation_failed()}
    assert refused == {pauses["call-book"].claims.jti, pauses["call-date"].claims.jti}
    assert not continue_agent(agent, last, store=store).ran and tool_runs("book_flight") == 0


def test_an_unchanged_call_continues_though_its_arguments_were_stored_in_another_order() -> None:
    agent, store, pauses = paused("shown-3")
    resume_pause(pauses["call-date"].token, "May 3rd")
    last = resume_pause(pauses["call-book"].token, APPROVE)
    edit_stored_call("shown-3", "call-book", lambda args: dict(reversed(list(args.items()))))

    result = continue_agent(agent, last, store=store)

    assert result.ran and result.output == "done. ask_date: May 3rd; book_flight: booked 2 to Lisbon"
    assert tool_runs("book_flight") == 1


def test_override_args_still_applies_the_persons_arguments() -> None:
    agent, store, pauses = paused("shown-4")
    resume_pause(pauses["call-date"].token, "May 3rd")
    override = {"approved": True, "override_args": {"destination": "Porto", "seats": 1}}
    last = resume_pause(pauses["call-book"].token, override)

    result = continue_agent(agent, last, store=store)

    assert result.ran and "booked 1 to Porto" in result.output
    assert tool_runs("book_flight") == 1


@pytest.mark.django_db(transaction=True)
async def test_the_async_twin_refuses_a_changed_call_too() -> None:
    agent = travel_agent()
    store = DjangoConversationStore()

    result = await agent.run(
        "Book me two seats to Lisbon.", conversation=Conversation(conversation_id="shown-5")
    )
    await store.save(result)
    minted = await apause_deferred(result, store=store, run_id="run-1", session_id="session-1", agent=agent)
    pauses = {pause.claims.tool_call_id: pause for pause in minted}
    await aresume_pause(pauses["call-date"].token, "May 3rd")
    last = await aresume_pause(pauses["call-book"].token, APPROVE)
    await sync_to_async(edit_stored_call)(
        "shown-5", "call-book", lambda args: {**args, "destination": "Tokyo"}
    )

    refused = await acontinue_agent(agent, last, store=store)

    assert not refused.ran and refused.reason is not None and CHANGED in refused.reason
    assert await sync_to_async(tool_runs)("book_flight") == 0
