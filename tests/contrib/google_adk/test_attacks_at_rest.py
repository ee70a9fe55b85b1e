"""A confirmation binds to the tool call its person saw: a stored event edited since refuses the continuation.

ADK resumes from the session's events: the model's tool call and the ``adk_request_confirmation``
call holding it back. Each test pauses the payments app (``pay`` 2400 to acme, ``book``) on
``DjangoSessionService``, edits a stored event, answers the group and continues: the continuation
is refused (``ran=False``, every pause of the group ``refused`` with the reason) and no tool runs.

An edit without the key fails the event row's MAC. An edit made *with* the key (a writer holding
``SECRET_KEY``: the row's MAC verifies) changes the tool, the call id or the arguments, and only
the pause's own record of what was shown stands in its way.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from google.genai import types

from tests.contrib.google_adk.agents import tool_runs
from tests.contrib.google_adk.paused import BOOK_ANSWER, CONFIRM, Paused, paused
from tests.contrib.raw_edits import raw_update
from turnstate_app.choices import ContinuationState
from turnstate_app.contrib.google_adk import DjangoSessionService, continue_invocation
from turnstate_app.contrib.google_adk.codec import EVENT, decode, encode
from turnstate_app.contrib.google_adk.confirmations import REQUEST_CONFIRMATION
from turnstate_app.contrib.google_adk.models import StoredEvent
from turnstate_app.models import Pause

pytestmark = pytest.mark.django_db(transaction=True)


def rewrite_with_key(run: Paused, event_id: str, edit: Callable[[dict[str, Any]], None]) -> None:
    """Edit the stored event ``event_id`` and store it with a MAC that verifies."""
    row = StoredEvent.objects.get(event_id=event_id, session__session_id=run.session_id)
    identity = (run.runner.app_name, run.user_id, run.session_id, event_id)
    data = decode(
        EVENT, row.event, row.encryption_key_id, row.value_mac, thread=run.session_id, identity=identity
    )
    edit(data)
    stored, key_id, mac = encode(EVENT, data, thread=run.session_id, identity=identity)
    StoredEvent.objects.filter(pk=row.pk).update(event=stored, encryption_key_id=key_id, value_mac=mac)


def calls(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The function calls of a stored event, as it stores them."""
    return [part["function_call"] for part in data["content"]["parts"] if "function_call" in part]


def tool_call_event(run: Paused) -> str:
    return str(
        next(
            event.id for event in run.events if any(call.name == "pay" for call in event.get_function_calls())
        )
    )


def confirmation_event(run: Paused) -> str:
    return run.pauses["pay"].claims.checkpoint_id


def originals(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        call["args"]["originalFunctionCall"] for call in calls(data) if call["name"] == REQUEST_CONFIRMATION
    ]


def continued(run: Paused) -> Any:
    _, last = run.answer(pay=CONFIRM, book=BOOK_ANSWER)
    return continue_invocation(run.runner, last)


def assert_refused(run: Paused, result: Any, *words: str) -> None:
    assert not result.ran, result
    for word in words:
        assert word in (result.reason or ""), result.reason
    assert tool_runs("pay") == [] and tool_runs("book") == []
    states = set(Pause.objects.filter(run_id=run.invocation_id).values_list("continuation", flat=True))
    assert states == {ContinuationState.REFUSED}


def test_an_event_edited_without_the_key_fails_its_mac_and_nothing_runs() -> None:
    run = paused(DjangoSessionService())
    row = StoredEvent.objects.get(event_id=confirmation_event(run))
    raw_update(StoredEvent, row.pk, "event", row.event.replace("2400", "9999"))
    assert_refused(run, continued(run), "MAC")


def test_arguments_edited_in_both_events_with_the_key_are_not_what_was_shown() -> None:
    run = paused(DjangoSessionService())

    def pay_more(data: dict[str, Any]) -> None:
        for call in calls(data) + originals(data):
            if call["name"] == "pay":
                call["args"]["amount"] = 9999

    rewrite_with_key(run, tool_call_event(run), pay_more)
    rewrite_with_key(run, confirmation_event(run), pay_more)
    assert_refused(run, continued(run), "question changed")


def test_a_tool_call_edited_behind_its_confirmation_is_refused() -> None:
    run = paused(DjangoSessionService())

    def pay_more(data: dict[str, Any]) -> None:
        for call in calls(data):
            if call["name"] == "pay":
                call["args"]["amount"] = 9999

    rewrite_with_key(run, tool_call_event(run), pay_more)  # the confirmation still shows 2400
    assert_refused(run, continued(run), "'c-pay'", "not in the session as the confirmation asks")


def test_another_tool_behind_the_confirmation_is_refused() -> None:
    run = paused(DjangoSessionService())

    def refund_instead(data: dict[str, Any]) -> None:
        for call in calls(data) + originals(data):
            if call["name"] == "pay":
                call["name"], call["args"] = "refund", {"amount": 2400}

    rewrite_with_key(run, tool_call_event(run), refund_instead)
    rewrite_with_key(run, confirmation_event(run), refund_instead)
    assert_refused(run, continued(run), "question changed")
    assert tool_runs("refund") == []


def test_another_call_id_is_refused() -> None:
    run = paused(DjangoSessionService())

    def other_id(data: dict[str, Any]) -> None:
        for call in calls(data) + originals(data):
            if call.get("id") == "c-pay":
                call["id"] = "c-pay-2"

    rewrite_with_key(run, tool_call_event(run), other_id)
    rewrite_with_key(run, confirmation_event(run), other_id)
    assert_refused(run, continued(run), "no longer asks to confirm call 'c-pay'")


def test_a_confirmation_answered_in_the_session_behind_the_pauses_back_is_refused() -> None:
    run = paused(DjangoSessionService())
    asked = next(event for event in run.events if event.id == confirmation_event(run))
    responses = [
        types.Part(
            function_response=types.FunctionResponse(
                name=REQUEST_CONFIRMATION, id=call.id, response={"confirmed": True}
            )
        )
        for call in asked.get_function_calls()
        if call.args["originalFunctionCall"]["name"] == "pay"
    ]

    async def answer_directly() -> None:
        message = types.Content(role="user", parts=responses)
        async for _ in run.runner.run_async(
            user_id=run.user_id, session_id=run.session_id, new_message=message
        ):
            pass

    asyncio.run(answer_directly())
    assert tool_runs("pay") == ["2400 to acme"]
    _, last = run.answer(pay=CONFIRM, book=BOOK_ANSWER)
    result = continue_invocation(run.runner, last)
    assert not result.ran and "answered in the session already" in (result.reason or "")
    assert tool_runs("pay") == ["2400 to acme"]  # once, not again
    assert json.dumps(tool_runs("book")) == "[]"


def test_an_erased_session_is_refused() -> None:
    run = paused(DjangoSessionService())
    asyncio.run(
        run.runner.session_service.delete_session(
            app_name=run.runner.app_name, user_id=run.user_id, session_id=run.session_id
        )
    )
    assert_refused(run, continued(run), "is not in the runner's session service")
