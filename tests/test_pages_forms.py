"""The answer page's form, built from the pause's ``answer_schema``, for each shape the integrations
mint and for plain pauses: what it shows, the answer each way of filling it gives, and the errors
it shows beside a field, the pause left pending."""

from __future__ import annotations

from typing import Any

import pytest

from tests.pages_support import (
    LANGCHAIN_PER_CALL,
    LANGCHAIN_PER_CALL_REQUEST,
    SEND_EMAIL_ARGS,
    answer_of,
    client_for,
    error_beside,
    field_errors,
    labelled,
    langchain_batched,
    langchain_per_call,
    openai_approval,
    pause_url,
    pydantic_ai_approval,
)
from tests.pause_helpers import mint
from turnstate_app.models import Pause
from turnstate_app.pages.answer_forms import AnswerForm, FormError, answer_from, form_for

pytestmark = pytest.mark.django_db


def post(user: Any, jti: str, data: dict[str, Any]) -> Any:
    """Shows the page, then sends the form as the person filled it."""
    client = client_for(user)
    assert client.get(pause_url(jti)).status_code == 200
    return client.post(pause_url(jti), data)


def status_of(jti: str) -> str:
    return str(Pause.objects.get(jti=jti).status)


# -- the form each schema calls for ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "kind"),
    [
        (None, "json"),
        ({}, "json"),
        ({"type": "object", "properties": {"date": {"type": "string"}}}, "json"),
        ({"type": "string"}, "scalar"),
        ({"type": "integer"}, "scalar"),
        ({"type": "number"}, "scalar"),
        ({"type": "boolean"}, "scalar"),
        ({"enum": ["yes", "no"]}, "choice"),
        ({"oneOf": [{"const": 1, "title": "One"}, {"const": 2, "title": "Two"}]}, "choice"),
        ({"$defs": {"c": {"enum": ["a", "b"]}}, "$ref": "#/$defs/c"}, "choice"),
        (LANGCHAIN_PER_CALL, "decision"),
    ],
)
def test_each_schema_shape_gets_its_form(schema: Any, kind: str) -> None:
    assert form_for(schema, LANGCHAIN_PER_CALL_REQUEST).kind == kind


def test_a_review_of_several_calls_is_answered_as_json_one_decision_each() -> None:
    from tests.pages_support import batched_review
    from turnstate_app.contrib.langgraph.hitl import batched_answer_schema

    review = batched_review("a", "b")
    assert form_for(batched_answer_schema(review), review).kind == "json"


def test_a_form_survives_the_session_as_data() -> None:
    form = form_for(LANGCHAIN_PER_CALL, LANGCHAIN_PER_CALL_REQUEST)
    assert AnswerForm.from_data(form.as_data()) == form


@pytest.mark.parametrize(
    ("kind", "raw", "expected"),
    [("integer", "7", 7), ("number", "2.5", 2.5), ("number", "3", 3), ("string", "a\r\nb", "a\nb")],
)
def test_a_scalar_is_converted_to_the_schemas_type(kind: str, raw: str, expected: Any) -> None:
    assert answer_from(AnswerForm(kind="scalar", type=kind), {"answer": raw}) == expected


@pytest.mark.parametrize(("kind", "raw"), [("integer", "7.5"), ("integer", "seven"), ("number", "nan")])
def test_a_scalar_that_is_not_of_its_type_is_an_error_beside_answer(kind: str, raw: str) -> None:
    with pytest.raises(FormError) as refused:
        answer_from(AnswerForm(kind="scalar", type=kind), {"answer": raw})
    assert list(refused.value.errors) == ["answer"]


def test_json_that_does_not_parse_is_an_error_beside_answer_json() -> None:
    for raw in ("yes", "{", "NaN"):
        with pytest.raises(FormError) as refused:
            answer_from(AnswerForm(kind="json"), {"answer_json": raw})
        assert list(refused.value.errors) == ["answer_json"]


# -- plain pauses, through the page -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "data", "answer"),
    [
        ({"enum": ["yes", "no"]}, {"answer": "no"}, "no"),
        ({"oneOf": [{"const": 1, "title": "One"}, {"const": 2, "title": "Two"}]}, {"answer": "2"}, 2),
        ({"type": "string", "minLength": 1}, {"answer": "Tuesday,\r\nafter lunch"}, "Tuesday,\nafter lunch"),
        ({"type": "integer"}, {"answer": "3"}, 3),
        ({"type": "number"}, {"answer": "1.5"}, 1.5),
        ({"type": "boolean"}, {"answer": "true"}, True),
        ({"type": "boolean"}, {}, False),
        (None, {"answer_json": '{"date": "2026-12-24"}'}, {"date": "2026-12-24"}),
        ({"type": "array", "items": {"type": "string"}}, {"answer_json": '["a", "b"]'}, ["a", "b"]),
    ],
)
def test_a_plain_pause_is_answered_with_its_form(
    users: dict[str, Any], schema: Any, data: dict[str, Any], answer: Any
) -> None:
    minted = mint(owner=users["owner"], answer_schema=schema)
    response = post(users["owner"], minted.claims.jti, data)
    assert response.status_code == 200, response.content
    assert answer_of(minted) == answer


@pytest.mark.parametrize(
    ("schema", "needle"),
    [
        ({"enum": ["yes", "no"]}, 'type="radio" name="answer" value="yes"'),
        ({"oneOf": [{"const": 1, "title": "One"}, {"const": 2}]}, 'name="answer" value="1"'),
        ({"type": "string"}, '<textarea id="ts-answer" name="answer"'),
        ({"type": "integer"}, 'type="number" step="1" name="answer"'),
        ({"type": "number"}, 'type="number" step="any" name="answer"'),
        ({"type": "boolean"}, 'type="checkbox" name="answer" value="true"'),
        (None, 'name="answer_json"'),
    ],
)
def test_each_form_kind_shows_its_input_with_a_label(users: dict[str, Any], schema: Any, needle: str) -> None:
    minted = mint(owner=users["owner"], answer_schema=schema)
    html = client_for(users["owner"]).get(pause_url(minted.claims.jti)).content.decode()
    assert needle in html
    assert labelled(html)


def test_a_choices_title_labels_it(users: dict[str, Any]) -> None:
    minted = mint(
        owner=users["owner"], answer_schema={"oneOf": [{"const": 1, "title": "One night"}, {"const": 2}]}
    )
    html = client_for(users["owner"]).get(pause_url(minted.claims.jti)).content.decode()
    assert ">One night</label>" in html and ">2</label>" in html


@pytest.mark.parametrize(
    ("schema", "data", "field"),
    [
        ({"type": "string", "minLength": 5}, {"answer": "ab"}, "answer"),  # the schema refuses it
        ({"type": "integer"}, {"answer": "many"}, "answer"),  # the form cannot read it
        ({"enum": ["yes", "no"]}, {"answer": "maybe"}, "answer"),
        ({"enum": ["yes", "no"]}, {}, "answer"),
        ({"type": "object", "required": ["date"]}, {"answer_json": "{}"}, "answer_json"),
        (None, {"answer_json": "not json"}, "answer_json"),
    ],
)
def test_a_refused_answer_shows_the_form_again_with_the_error_beside_its_field(
    users: dict[str, Any], schema: Any, data: dict[str, Any], field: str
) -> None:
    minted = mint(owner=users["owner"], answer_schema=schema)
    response = post(users["owner"], minted.claims.jti, data)
    assert response.status_code == 400
    assert error_beside(response.content.decode(), field)
    assert status_of(minted.claims.jti) == "pending"


def test_a_refused_answer_keeps_what_the_person_wrote(users: dict[str, Any]) -> None:
    minted = mint(owner=users["owner"], answer_schema={"type": "string", "minLength": 50})
    html = post(users["owner"], minted.claims.jti, {"answer": "too short <b>"}).content.decode()
    assert "too short &lt;b&gt;</textarea>" in html


# -- approvals of each integration ------------------------------------------------------------------


def test_a_pydantic_ai_approval_is_approved_as_it_stands(users: dict[str, Any]) -> None:
    minted = pydantic_ai_approval(owner=users["owner"])
    response = post(users["owner"], minted.claims.jti, {"decision": "approve", **fields_as_shown()})
    assert response.status_code == 200, response.content
    assert answer_of(minted) == {"approved": True}


def test_a_pydantic_ai_approval_with_an_edited_argument_overrides_the_arguments(
    users: dict[str, Any],
) -> None:
    minted = pydantic_ai_approval(owner=users["owner"])
    edited = {**fields_as_shown(), "arg-to": "bo@example.com", "arg-retries": "3"}
    response = post(users["owner"], minted.claims.jti, {"decision": "approve", **edited})
    assert response.status_code == 200, response.content
    assert answer_of(minted) == {
        "approved": True,
        "override_args": {**SEND_EMAIL_ARGS, "to": "bo@example.com", "retries": 3},
    }


def test_a_pydantic_ai_rejection_carries_the_reason_as_its_message(users: dict[str, Any]) -> None:
    minted = pydantic_ai_approval(owner=users["owner"])
    response = post(users["owner"], minted.claims.jti, {"decision": "reject", "reason": "Not to Ana."})
    assert response.status_code == 200, response.content
    assert answer_of(minted) == {"approved": False, "message": "Not to Ana."}


def test_a_pydantic_ai_approval_shows_each_argument_as_an_input_holding_its_value(
    users: dict[str, Any],
) -> None:
    minted = pydantic_ai_approval(owner=users["owner"])
    html = client_for(users["owner"]).get(pause_url(minted.claims.jti)).content.decode()
    assert 'name="arg-to" rows="2">\nana@example.com</textarea>' in html
    assert 'name="arg-body" rows="2">\nHi Ana,\nsee you.</textarea>' in html
    assert 'step="1" name="arg-retries" value="2"' in html
    assert 'name="decision" value="approve"' in html and 'name="decision" value="reject"' in html


def test_an_edit_the_schema_refuses_is_shown_beside_the_decision(users: dict[str, Any]) -> None:
    minted = pydantic_ai_approval(owner=users["owner"])
    response = post(
        users["owner"], minted.claims.jti, {"decision": "approve", **fields_as_shown(), "arg-retries": "x"}
    )
    assert response.status_code == 400
    assert 'value="x"' in response.content.decode() and field_errors(response.content.decode())
    assert status_of(minted.claims.jti) == "pending"


def test_an_openai_approval_offers_no_edit_and_answers_approve_or_reject(users: dict[str, Any]) -> None:
    first, second = openai_approval(owner=users["owner"]), openai_approval(owner=users["owner"])
    html = client_for(users["owner"]).get(pause_url(first.claims.jti)).content.decode()
    assert 'name="arg-' not in html and 'name="args_json"' not in html
    assert post(users["owner"], first.claims.jti, {"decision": "approve"}).status_code == 200
    assert post(users["owner"], second.claims.jti, {"decision": "reject", "reason": ""}).status_code == 200
    assert answer_of(first) == {"approved": True}
    assert answer_of(second) == {"approved": False}


def test_a_langchain_review_approves_edits_and_rejects(users: dict[str, Any]) -> None:
    approve, edit, reject = (langchain_per_call(owner=users["owner"]) for _ in range(3))
    shown = {"arg-to": "ana@example.com", "arg-body": "hi"}
    assert post(users["owner"], approve.claims.jti, {"decision": "approve", **shown}).status_code == 200
    edited = {"decision": "approve", **shown, "arg-body": "hello"}
    assert post(users["owner"], edit.claims.jti, edited).status_code == 200
    assert post(users["owner"], reject.claims.jti, {"decision": "reject", "reason": "No."}).status_code == 200
    assert answer_of(approve) == {"type": "approve"}
    assert answer_of(edit) == {
        "type": "edit",
        "edited_action": {"name": "send_email", "args": {"to": "ana@example.com", "body": "hello"}},
    }
    assert answer_of(reject) == {"type": "reject", "message": "No."}


def test_a_batched_review_of_one_call_answers_its_one_decision_and_may_respond(users: dict[str, Any]) -> None:
    respond, reject = (
        langchain_batched("rm", owner=users["owner"]),
        langchain_batched("rm", owner=users["owner"]),
    )
    html = client_for(users["owner"]).get(pause_url(respond.claims.jti)).content.decode()
    assert 'name="decision" value="respond"' in html
    assert (
        post(
            users["owner"], respond.claims.jti, {"decision": "respond", "reason": "Done by hand."}
        ).status_code
        == 200
    )
    assert post(users["owner"], reject.claims.jti, {"decision": "reject"}).status_code == 200
    assert answer_of(respond) == {"decisions": [{"type": "respond", "message": "Done by hand."}]}
    assert answer_of(reject) == {"decisions": [{"type": "reject"}]}


def test_a_response_without_words_is_an_error_beside_the_reason(users: dict[str, Any]) -> None:
    minted = langchain_batched("rm", owner=users["owner"])
    response = post(users["owner"], minted.claims.jti, {"decision": "respond", "reason": "  "})
    assert response.status_code == 400 and field_errors(response.content.decode())
    assert status_of(minted.claims.jti) == "pending"


def test_a_batched_review_of_several_calls_is_answered_in_json(users: dict[str, Any]) -> None:
    minted = langchain_batched("a", "b", owner=users["owner"])
    answer = '{"decisions": [{"type": "approve"}, {"type": "reject", "message": "no"}]}'
    assert post(users["owner"], minted.claims.jti, {"answer_json": answer}).status_code == 200
    assert answer_of(minted) == {"decisions": [{"type": "approve"}, {"type": "reject", "message": "no"}]}


def test_a_decision_the_pause_does_not_offer_is_an_error(users: dict[str, Any]) -> None:
    minted = openai_approval(owner=users["owner"])
    response = post(users["owner"], minted.claims.jti, {"decision": "respond", "reason": "x"})
    assert response.status_code == 400 and field_errors(response.content.decode())
    assert status_of(minted.claims.jti) == "pending"


def fields_as_shown() -> dict[str, str]:
    """The argument inputs of :data:`SEND_EMAIL_ARGS` as the page fills them."""
    return {"arg-to": "ana@example.com", "arg-body": "Hi Ana,\r\nsee you.", "arg-retries": "2"}


def test_a_batched_review_of_one_call_edits_its_arguments(users: dict[str, Any]) -> None:
    minted = langchain_batched("rm", owner=users["owner"])
    edited = {"decision": "approve", "arg-path": "/tmp/other"}
    assert post(users["owner"], minted.claims.jti, edited).status_code == 200
    assert answer_of(minted) == {
        "decisions": [{"type": "edit", "edited_action": {"name": "rm", "args": {"path": "/tmp/other"}}}]
    }


def test_a_review_that_allows_an_edit_but_no_plain_approval_refuses_an_unchanged_one(
    users: dict[str, Any],
) -> None:
    from tests.pages_support import batched_review
    from turnstate_app.contrib.langgraph.hitl import batched_answer_schema

    review = batched_review("rm", allowed=("edit", "reject"))
    minted = mint(owner=users["owner"], request=review, answer_schema=batched_answer_schema(review))
    unchanged = post(users["owner"], minted.claims.jti, {"decision": "approve", "arg-path": "/tmp/rm"})
    assert unchanged.status_code == 400 and field_errors(unchanged.content.decode())
    assert status_of(minted.claims.jti) == "pending"
    edited = {"decision": "approve", "arg-path": "/tmp/x"}
    assert post(users["owner"], minted.claims.jti, edited).status_code == 200
    assert answer_of(minted)["decisions"][0]["type"] == "edit"
