"""Tampering, by property: no altered token ever verifies."""

from __future__ import annotations

import pytest
from django.core import signing
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.factories import make_claims
from turnstate_app.errors import PayloadBindingError
from turnstate_app.pauses.tokens import MAX_TOKEN_CHARS, TOKEN_SALT, read_token, sign_claims

CLAIMS = make_claims(jti="fixed-jti", interrupt_id="int-1")
TOKEN = sign_claims(CLAIMS)


def test_a_signed_token_reads_back_and_is_small() -> None:
    assert read_token(TOKEN) == CLAIMS
    assert len(TOKEN) < 400


@settings(max_examples=300, deadline=None)
@given(position=st.integers(min_value=0), replacement=st.characters(codec="utf-8"))
def test_flipping_any_character_is_refused(position: int, replacement: str) -> None:
    position %= len(TOKEN)
    if TOKEN[position] == replacement:
        return
    tampered = TOKEN[:position] + replacement + TOKEN[position + 1 :]
    with pytest.raises(PayloadBindingError):
        read_token(tampered)


@settings(max_examples=200, deadline=None)
@given(length=st.integers(min_value=0))
def test_truncating_is_refused(length: int) -> None:
    with pytest.raises(PayloadBindingError):
        read_token(TOKEN[: length % len(TOKEN)])


@settings(max_examples=200, deadline=None)
@given(suffix=st.text(min_size=1, max_size=50))
def test_appending_is_refused(suffix: str) -> None:
    with pytest.raises(PayloadBindingError):
        read_token(TOKEN + suffix)


@settings(max_examples=100, deadline=None)
@given(key=st.text(min_size=1, max_size=40), salt=st.text(max_size=40))
def test_resigning_with_another_key_or_salt_is_refused(key: str, salt: str) -> None:
    payload = CLAIMS.model_dump(exclude_none=True)
    if salt != TOKEN_SALT:
        with pytest.raises(PayloadBindingError):
            read_token(signing.dumps(payload, salt=salt, compress=True))
    with pytest.raises(PayloadBindingError):
        read_token(signing.dumps(payload, key="other:" + key, salt=TOKEN_SALT, compress=True))


@pytest.mark.parametrize(
    "payload",
    [{"not": "claims"}, ["list"], "text", {**CLAIMS.model_dump(), "jti": ""}],
)
def test_signed_payloads_that_are_not_claims_are_refused(payload: object) -> None:
    with pytest.raises(PayloadBindingError):
        read_token(signing.dumps(payload, salt=TOKEN_SALT, compress=True))


def test_oversize_and_non_text_tokens_are_refused() -> None:
    with pytest.raises(PayloadBindingError, match=str(MAX_TOKEN_CHARS)):
        read_token("a" * (MAX_TOKEN_CHARS + 1))
    for token in (None, b"bytes", 42, ""):
        with pytest.raises(PayloadBindingError):
            read_token(token)
