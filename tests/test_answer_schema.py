"""Answers validated against the pause's JSON Schema before the token is consumed."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.test.utils import CaptureQueriesContext
from drf_spectacular.generators import SchemaGenerator

from tests.api_support import PAUSES, client_for, pause_url
from tests.pause_helpers import mint, mint_fields
from tests.test_pauses import RESUME_STATEMENTS, data_statements
from turnstate_app.errors import AnswerValidationError, CheckpointFieldError, PauseAlreadyAnsweredError
from turnstate_app.models import CheckpointMetadata, Pause, PauseStatus
from turnstate_app.pauses import mint_pause, resume_pause

pytestmark = pytest.mark.django_db
RESUME = "/api/turnstate/pauses/resume/"

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"date": {"type": "string", "format": "date"}, "seats": {"type": "integer", "minimum": 1}},
    "required": ["date", "seats"],
    "additionalProperties": False,
}


def test_an_invalid_answer_is_refused_and_the_pause_stays_pending() -> None:
    minted = mint(answer_schema=SCHEMA)
    with pytest.raises(AnswerValidationError) as refused:
        resume_pause(minted.token, {"seats": 0, "extra": True})
    assert isinstance(refused.value, ValueError)
    assert refused.value.messages == [
        "$: 'date' is a required property",
        "$: Additional properties are not allowed ('extra' was unexpected)",
        "$.seats: 0 is less than the minimum of 1",
    ]
    pause = Pause.objects.get(jti=minted.claims.jti)
    assert pause.status == PauseStatus.PENDING
    assert not CheckpointMetadata.objects.filter(key=f"answer:{minted.claims.jti}").exists()
    resumed = resume_pause(minted.token, {"date": "2026-12-24", "seats": 2})
    assert resumed.answer == {"date": "2026-12-24", "seats": 2}


def test_a_bad_schema_is_refused_at_mint_and_nothing_is_written() -> None:
    with pytest.raises(CheckpointFieldError, match="answer_schema: is not a valid JSON Schema"):
        mint_pause(**mint_fields(answer_schema={"type": "no-such-type"}))
    assert not Pause.objects.exists()
    assert not CheckpointMetadata.objects.exists()


def test_a_usable_schema_is_walked_once_and_a_bad_one_is_refused_every_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from turnstate_app.pauses import answers

    walked: list[Any] = []
    real = answers.require_usable

    def counted(schema: dict[str, Any]) -> None:
        walked.append(schema)
        real(schema)

    monkeypatch.setattr(answers, "require_usable", counted)
    monkeypatch.setattr(answers, "_proved", set())
    fresh = {**SCHEMA, "title": "walked once"}
    for _ in range(3):
        mint(answer_schema=dict(reversed(list(fresh.items()))))  # key order is not a new schema
    assert len(walked) == 1
    for _ in range(2):
        with pytest.raises(CheckpointFieldError, match="not a valid JSON Schema"):
            mint_pause(**mint_fields(answer_schema={"type": "no-such-type"}))
    assert len(walked) == 3


def test_rest_answers_400_with_every_error_on_answer_and_the_pause_stays_pending(
    users: dict[str, Any],
) -> None:
    minted = mint(owner=users["owner"], answer_schema=SCHEMA)
    client = client_for(users["owner"])
    response = client.post(RESUME, {"token": minted.token, "answer": {"date": 3}}, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "answer": ["$: 'seats' is a required property", "$.date: 3 is not of type 'string'"]
    }
    assert Pause.objects.get(jti=minted.claims.jti).status == PauseStatus.PENDING
    fixed = client.post(RESUME, {"token": minted.token, "answer": {"date": "x", "seats": 1}}, format="json")
    assert fixed.status_code == 200 and fixed.json()["status"] == "answered"


def test_the_schema_is_checked_with_its_own_draft() -> None:
    """Draft 4's ``exclusiveMaximum`` is a flag beside ``maximum``; 2020-12's is the bound itself."""
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "maximum": 5, "exclusiveMaximum": True}
    with pytest.raises(AnswerValidationError, match=r"\$: 5 is greater than or equal to the maximum of 5"):
        resume_pause(mint(answer_schema=draft4).token, 5)
    with pytest.raises(CheckpointFieldError, match="answer_schema"):  # not a number: invalid in 2020-12
        mint(answer_schema={"exclusiveMaximum": True})
    assert resume_pause(mint(answer_schema={"exclusiveMaximum": 6}).token, 5).answer == 5


def test_the_answer_is_judged_after_the_person_and_the_pause(users: dict[str, Any]) -> None:
    """Someone else's wrong answer is refused for who they are, an answered pause for being answered."""
    minted = mint(owner=users["owner"], answer_schema={"type": "integer"})
    with pytest.raises(PermissionDenied):
        resume_pause(minted.token, "not an integer", user=users["other"])
    resume_pause(minted.token, 1, user=users["owner"])
    with pytest.raises(PauseAlreadyAnsweredError):
        resume_pause(minted.token, "not an integer", user=users["owner"])


def test_a_schema_costs_no_statement_at_resume() -> None:
    """The schema comes with the ledger row the resume reads anyway: no statement more."""
    minted = mint(answer_schema=SCHEMA)
    with CaptureQueriesContext(connection) as refused, pytest.raises(AnswerValidationError):
        resume_pause(minted.token, {})
    # One read: the ledger row with its turn state; nothing written.
    assert len(data_statements(refused)) == 1, data_statements(refused)
    with CaptureQueriesContext(connection) as resuming:
        resume_pause(minted.token, {"date": "2026-12-24", "seats": 1})
    assert len(data_statements(resuming)) == RESUME_STATEMENTS, data_statements(resuming)


def test_a_schema_must_be_an_object() -> None:
    with pytest.raises(CheckpointFieldError, match="must be a JSON Schema object"):
        mint(answer_schema=["type", "string"])  # type: ignore[arg-type]
    assert not Pause.objects.exists()


@pytest.mark.parametrize(
    ("ref", "problem"),
    [
        ("https://example.com/schema.json", "nothing is fetched"),
        ("#/$defs/missing", "points at nothing"),
    ],
)
def test_a_reference_that_cannot_be_followed_is_refused_at_mint(ref: str, problem: str) -> None:
    schema = {"$defs": {"date": {"type": "string"}}, "properties": {"when": {"$ref": ref}}}
    with pytest.raises(CheckpointFieldError, match=problem):
        mint(answer_schema=schema)
    assert not Pause.objects.exists()


def test_references_within_the_schema_are_followed() -> None:
    schema = {
        "$defs": {"seats": {"type": "integer", "minimum": 1}},
        "properties": {"seats": {"$ref": "#/$defs/seats"}},
        "const_is_data": {"const": {"$ref": "https://not.followed/"}},
    }
    minted = mint(answer_schema=schema)
    with pytest.raises(AnswerValidationError, match=r"\$\.seats: 0 is less than the minimum of 1"):
        resume_pause(minted.token, {"seats": 0})
    assert resume_pause(minted.token, {"seats": 2}).answer == {"seats": 2}


# -- what a client sees: the schema on GET pauses/<jti>/, errors that name what was expected ------

APPROVAL: dict[str, Any] = {
    "oneOf": [
        {
            "type": "object",
            "properties": {"approved": {"const": True}, "note": {"type": "string"}},
            "required": ["approved"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"approved": {"const": False}, "message": {"type": "string"}},
            "required": ["approved"],
            "additionalProperties": False,
        },
    ]
}


def test_the_detail_carries_the_answer_schema_and_null_without_one(users: dict[str, Any]) -> None:
    with_schema = mint(owner=users["owner"], answer_schema=APPROVAL)
    without = mint(owner=users["owner"])
    client = client_for(users["owner"])
    assert client.get(pause_url(with_schema.claims.jti)).json()["answer_schema"] == APPROVAL
    assert client.get(pause_url(without.claims.jti)).json()["answer_schema"] is None
    listed = {row["jti"]: row["answer_schema"] for row in client.get(PAUSES).json()["results"]}
    assert listed == {with_schema.claims.jti: APPROVAL, without.claims.jti: None}


def test_the_openapi_schema_describes_answer_schema() -> None:
    generated = SchemaGenerator().get_schema(request=None, public=True)
    field = generated["components"]["schemas"]["TurnstatePause"]["properties"]["answer_schema"]
    assert field["type"] == "object" and field["nullable"] is True and field["readOnly"] is True
    assert "JSON Schema" in field["description"]


def test_an_answer_matching_no_alternative_is_told_what_each_expects() -> None:
    minted = mint(answer_schema=APPROVAL)
    with pytest.raises(AnswerValidationError) as refused:
        resume_pause(minted.token, "yes")
    [message] = refused.value.messages
    assert message.startswith("$: 'yes' is not valid under any of the given schemas; expected one of: ")
    assert '(1) an object with "approved": true' in message
    assert '(2) an object with "approved": false' in message
    assert "$: 'yes' is not of type 'object'" in message
    with pytest.raises(AnswerValidationError) as refused:
        resume_pause(minted.token, {"approved": "yes"})
    [message] = refused.value.messages
    assert "$.approved: True was expected" in message and "$.approved: False was expected" in message
    assert Pause.objects.get(jti=minted.claims.jti).status == PauseStatus.PENDING


def test_any_of_deep_in_an_answer_names_its_alternatives_by_title_or_shape() -> None:
    schema = {
        "type": "object",
        "properties": {
            "decision": {
                "anyOf": [
                    {
                        "title": "Approve",
                        "type": "object",
                        "properties": {"type": {"const": "approve"}},
                        "required": ["type"],
                    },
                    {"type": "object", "properties": {"type": {"enum": ["reject", "skip"]}}},
                    {"type": ["integer", "null"]},
                ]
            }
        },
    }
    with pytest.raises(AnswerValidationError) as refused:
        resume_pause(mint(answer_schema=schema).token, {"decision": "maybe"})
    [message] = refused.value.messages
    assert message.startswith("$.decision: 'maybe' is not valid under any of the given schemas; ")
    assert "(1) Approve" in message
    assert '(2) an object with "type" one of ["reject", "skip"]' in message
    assert "(3) an integer or null ($.decision: 'maybe' is not of type 'integer', 'null')" in message


def test_rest_400_names_what_was_expected(users: dict[str, Any]) -> None:
    minted = mint(owner=users["owner"], answer_schema=APPROVAL)
    response = client_for(users["owner"]).post(
        RESUME, {"token": minted.token, "answer": "yes"}, format="json"
    )
    assert response.status_code == 400
    [message] = response.json()["answer"]
    assert 'expected one of: (1) an object with "approved": true' in message
