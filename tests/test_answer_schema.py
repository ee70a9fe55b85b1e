"""Answers validated against the pause's JSON Schema before the token is consumed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.pause_helpers import mint, mint_fields
from turnstate_app.errors import AnswerValidationError, CheckpointFieldError
from turnstate_app.models import CheckpointMetadata, Pause, PauseStatus
from turnstate_app.pauses import mint_pause, resume_pause

pytestmark = pytest.mark.django_db

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
