"""ADK tool confirmations as one group of pauses: what each asks, and which answers it takes.

The payments app (``tests.contrib.google_adk.agents``) runs on a scripted model and stops for two
confirmations: ``pay`` (gated with ``require_confirmation``) and ``book`` (which asks itself, with a
hint and a payload: the day and seats to confirm).
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from tests.api_support import RESUME, client_for
from tests.contrib.google_adk.agents import ASKED, BOOK, PAY
from tests.contrib.google_adk.paused import BOOK_ANSWER, CONFIRM, REJECT, paused
from tests.factories import UserFactory
from turnstate_app.contrib.google_adk import pause_confirmations
from turnstate_app.contrib.google_adk.confirmations import REQUEST_CONFIRMATION, answer_schema, payload_schema
from turnstate_app.contrib.google_adk.errors import NothingToConfirmError, UnnamedAgentError
from turnstate_app.errors import AnswerValidationError
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pauses import resume_pause

pytestmark = pytest.mark.django_db(transaction=True)


def valid(answer: Any, schema: dict[str, Any]) -> bool:
    try:
        jsonschema.validate(answer, schema)
    except jsonschema.ValidationError:
        return False
    return True


def test_a_payloads_schema_is_derived_from_the_shape_the_tool_asked_for() -> None:
    schema = payload_schema({"day": "monday", "seats": 2, "vip": False, "tags": ["a"], "price": 1.5})
    assert valid({"day": "friday", "seats": 9, "vip": True, "tags": [], "price": 3}, schema)
    assert not valid({"day": "friday", "seats": "9", "vip": True, "tags": [], "price": 3}, schema)  # a type
    assert not valid({"day": "friday", "seats": 9, "vip": 1, "tags": [], "price": 3}, schema)  # 1 is no bool
    assert not valid({"day": "friday", "seats": 9, "vip": True, "tags": [1], "price": 3}, schema)  # items
    assert not valid({"day": "friday", "seats": 9, "vip": True, "tags": []}, schema)  # a key missing
    assert not valid({"day": "x", "seats": 1, "vip": True, "tags": [], "price": 3, "more": 1}, schema)
    with pytest.raises(ValueError, match="no JSON type"):
        payload_schema({"when": object()})


def test_a_confirmation_takes_confirmed_and_the_payload_only_when_the_tool_asked_for_one() -> None:
    plain, structured = answer_schema(None), answer_schema(ASKED)
    assert valid(CONFIRM, plain) and valid(REJECT, plain)
    assert not valid({"confirmed": "yes"}, plain) and not valid({**CONFIRM, "payload": {}}, plain)
    assert valid(BOOK_ANSWER, structured) and valid(REJECT, structured)
    assert not valid(CONFIRM, structured)  # the data the tool asked for is missing
    assert not valid({"confirmed": True, "payload": {"day": "tuesday"}}, structured)
    assert not valid({"confirmed": False, "payload": BOOK_ANSWER["payload"]}, structured)
    assert valid({"confirmed": True, "payload": {}}, answer_schema({}))


def test_pausing_mints_one_group_showing_each_tool_its_arguments_hint_and_payload() -> None:
    run = paused()
    pay, book = run.pauses["pay"], run.pauses["book"]
    rows = {row.jti: row for row in Pause.objects.all()}
    assert (pay.claims.tool_call_id, book.claims.tool_call_id) == ("c-pay", "c-book")
    assert pay.claims.thread_id == pay.claims.session_id == run.session_id
    assert pay.claims.run_id == book.claims.run_id == run.invocation_id
    asked = next(
        event
        for event in run.events
        if any(c.name == REQUEST_CONFIRMATION for c in event.get_function_calls())
    )
    assert pay.claims.checkpoint_id == book.claims.checkpoint_id == asked.id
    assert pay.resumable and book.resumable
    assert rows[pay.claims.jti].group == rows[book.claims.jti].group is not None
    assert rows[pay.claims.jti].agent == rows[book.claims.jti].agent == "adk_payments"
    pay_request = json.loads(CheckpointMetadata.objects.get(key="ask_user_request:c-pay").value)
    book_request = json.loads(CheckpointMetadata.objects.get(key="ask_user_request:c-book").value)
    assert (pay_request["tool_name"], pay_request["arguments"], pay_request["payload"]) == ("pay", PAY, None)
    assert "pay()" in pay_request["hint"] and pay_request["confirmation_id"].startswith("adk-")
    assert (book_request["tool_name"], book_request["arguments"]) == ("book", BOOK)
    assert (book_request["hint"], book_request["payload"]) == ("Confirm the day and the seats.", ASKED)
    assert rows[pay.claims.jti].answer_schema == answer_schema(None)
    assert rows[book.claims.jti].answer_schema == answer_schema(ASKED)


def test_owners_are_given_per_tool_call() -> None:
    alice: Any = UserFactory()
    bob: Any = UserFactory()
    run = paused(owner=alice)
    assert {row.name: row.owner for row in Pause.objects.all()} == {"pay": alice, "book": alice}
    with pytest.raises(ValueError, match="c-nope"):
        pause_confirmations(
            run.events,
            agent=run.runner.app,
            user_id=run.user_id,
            session_id=run.session_id,
            invocation_id=run.invocation_id,
            owners={"c-nope": bob},
        )
    Pause.objects.all().delete()
    minted = pause_confirmations(
        run.events,
        agent=run.runner.app,
        user_id=run.user_id,
        session_id=run.session_id,
        invocation_id=run.invocation_id,
        owner=alice,
        owners={"c-book": bob},
    )
    assert {row.name: row.owner for row in Pause.objects.all()} == {"pay": alice, "book": bob}
    assert len(minted) == 2


def test_an_invocation_waiting_on_nothing_or_an_unnamed_app_is_refused_and_nothing_is_minted() -> None:
    run = paused()
    Pause.objects.all().delete()
    with pytest.raises(NothingToConfirmError):
        pause_confirmations(
            run.events,
            agent=run.runner.app,
            user_id="alice",
            session_id=run.session_id,
            invocation_id="e-other",
        )

    class Nameless:
        name = ""

    with pytest.raises(UnnamedAgentError):
        pause_confirmations(
            run.events,
            agent=Nameless(),
            user_id="alice",
            session_id=run.session_id,
            invocation_id=run.invocation_id,
        )
    assert not Pause.objects.exists()


def test_a_wrong_payload_is_refused_before_the_token_is_spent_and_the_pause_stays_pending() -> None:
    run = paused()
    book = run.pauses["book"]
    with pytest.raises(AnswerValidationError) as refused:
        resume_pause(book.token, {"confirmed": True, "payload": {"day": "tuesday", "seats": "three"}})
    assert any("seats" in message for message in refused.value.messages)
    assert Pause.objects.get(jti=book.claims.jti).status == "pending"
    assert resume_pause(book.token, BOOK_ANSWER).answer == BOOK_ANSWER


def test_over_rest_a_wrong_payload_is_a_400_and_the_right_one_is_taken_once() -> None:
    run = paused()
    client = client_for(UserFactory())
    token = run.pauses["book"].token
    wrong = client.post(
        RESUME, {"token": token, "answer": {"confirmed": True, "payload": {"day": 3}}}, format="json"
    )
    assert wrong.status_code == 400, wrong.content
    assert Pause.objects.get(jti=run.pauses["book"].claims.jti).status == "pending"
    right = client.post(RESUME, {"token": token, "answer": BOOK_ANSWER}, format="json")
    assert right.status_code == 200, right.content
    again = client.post(RESUME, {"token": token, "answer": BOOK_ANSWER}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "already_answered"


def test_the_admin_shows_each_confirmation_with_its_tool_hint_and_payload(admin_client: Any) -> None:
    run = paused()
    book = Pause.objects.get(jti=run.pauses["book"].claims.jti)
    listing = admin_client.get("/admin/turnstate_app/pause/")
    assert listing.status_code == 200 and run.pauses["book"].claims.jti.encode() in listing.content
    page = admin_client.get(f"/admin/turnstate_app/pause/{book.pk}/change/")
    assert page.status_code == 200
    for shown in (b"book", b"Confirm the day and the seats.", b"monday", b"adk_payments"):
        assert shown in page.content, shown
