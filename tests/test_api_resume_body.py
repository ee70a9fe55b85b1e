"""The resume endpoint's body check takes what ``ResumeRequestSerializer`` takes, and refuses alike."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.exceptions import ValidationError

from tests.factories import make_claims
from turnstate_app.api.resume_body import resumed_body, token_and_answer
from turnstate_app.api.serializers import ResumedSerializer, ResumeRequestSerializer
from turnstate_app.pauses import ResumedPause

BODIES: list[Any] = [
    {"token": "abc.def:ghi", "answer": {"choice": "Monday"}},
    {"token": "abc", "answer": None},
    {"token": "abc", "answer": [1, 2.5, "x", True, None]},
    {"token": "abc", "answer": "text", "extra": 1},
    {"token": "", "answer": 1},
    {"token": None, "answer": 1},
    {"token": 123, "answer": 1},
    {"token": 1.5, "answer": 1},
    {"token": True, "answer": 1},
    {"token": ["abc"], "answer": 1},
    {"token": "a\x00b", "answer": 1},
    {"token": "caf\u00e9", "answer": 1},
    {"token": "a\ud800b", "answer": 1},
    {"token": "abc"},
    {"answer": 1},
    {},
    [],
    "token",
    None,
    {"token": "abc", "answer": {1: object()}},
]


def serializer_says(body: Any) -> tuple[str, Any] | Any:
    serializer = ResumeRequestSerializer(data=body)
    if serializer.is_valid():
        return serializer.validated_data["token"], serializer.validated_data["answer"]
    return serializer.errors


@pytest.mark.parametrize("body", BODIES, ids=range(len(BODIES)))
def test_the_body_check_agrees_with_the_serializer(body: Any) -> None:
    expected = serializer_says(body)
    if isinstance(expected, tuple):
        got = token_and_answer(body)
        assert got == expected
        assert type(got[0]) is str
    else:
        with pytest.raises(ValidationError) as refused:
            token_and_answer(body)
        with pytest.raises(ValidationError) as theirs:
            ResumeRequestSerializer(data=body).is_valid(raise_exception=True)
        assert refused.value.detail == expected
        assert refused.value.get_codes() == theirs.value.get_codes()


@pytest.mark.parametrize("recorded", [True, False])
def test_the_response_body_is_the_serializers(recorded: bool) -> None:
    checkpoint: Any = object() if recorded else None
    resumed = ResumedPause(claims=make_claims(), answer={"a": 1}, checkpoint=checkpoint)
    assert resumed_body(resumed) == dict(ResumedSerializer(resumed).data)
    assert list(resumed_body(resumed)) == list(ResumedSerializer(resumed).data)
