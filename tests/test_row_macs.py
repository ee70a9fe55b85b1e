"""A row's MAC (turnstate_app.integrity): bound to its table, identity, key id and stored value,
made under SECRET_KEY and verified under SECRET_KEY_FALLBACKS; and a continuation whose stored
start fails its MAC is refused, not crashed."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from tests.pause_helpers import mint
from turnstate_app.choices import ContinuationState
from turnstate_app.errors import UnreadableValueError
from turnstate_app.integrity import MAC_LENGTH, require_row, row_mac, row_verifies
from turnstate_app.models import Pause
from turnstate_app.pauses import Continuation, ContinueResult, acontinue_once, continue_once, resume_pause
from turnstate_app.status import lifecycle_status

TABLE = "turnstate_app.CheckpointMetadata"
ROW = ("thread-1", "cp-1", "answer:abc")


def test_a_mac_verifies_its_own_row_only() -> None:
    mac = row_mac(TABLE, ROW, "k1", b"token")
    assert len(mac) == MAC_LENGTH
    assert row_verifies(TABLE, ROW, "k1", b"token", mac)
    assert row_verifies(TABLE, ROW, "k1", "token", mac)  # text and its UTF-8 bytes are one value
    others: list[tuple[str, tuple[str, ...], str | None, Any]] = [
        ("turnstate_app.Other", ROW, "k1", b"token"),  # another table
        (TABLE, ("thread-2", "cp-1", "answer:abc"), "k1", b"token"),  # another row
        (TABLE, ("thread-1", "cp-1answer:abc", ""), "k1", b"token"),  # ids that concatenate alike
        (TABLE, ROW, None, b"token"),  # the same bytes said to be clear
        (TABLE, ROW, "k2", b"token"),  # another key id
        (TABLE, ROW, "k1", b"token2"),  # another value
    ]
    for table, identity, key_id, value in others:
        assert not row_verifies(table, identity, key_id, value, mac), (table, identity, key_id, value)


def test_no_value_and_an_empty_value_are_told_apart() -> None:
    assert not row_verifies(TABLE, ROW, None, b"", row_mac(TABLE, ROW, None, None))
    assert not row_verifies(TABLE, ROW, None, None, row_mac(TABLE, ROW, None, b""))


def test_a_missing_mac_never_verifies_and_the_error_names_the_row_not_the_value() -> None:
    assert not row_verifies(TABLE, ROW, None, b"secret answer", None)
    assert not row_verifies(TABLE, ROW, None, b"secret answer", "")
    with pytest.raises(UnreadableValueError) as raised:
        require_row(TABLE, ROW, None, b"secret answer", None)
    assert "has no MAC" in str(raised.value) and "answer:abc" in str(raised.value)
    assert "secret answer" not in str(raised.value)


def test_a_mac_made_under_a_guessed_key_does_not_verify() -> None:
    with override_settings(SECRET_KEY="a guess at the key"):
        guessed = row_mac(TABLE, ROW, None, b"approve")
    with pytest.raises(UnreadableValueError, match="does not match its MAC"):
        require_row(TABLE, ROW, None, b"approve", guessed)


def test_a_mac_made_under_the_previous_key_verifies_while_it_is_a_fallback() -> None:
    with override_settings(SECRET_KEY="the previous key " * 4):
        old = row_mac(TABLE, ROW, None, b"value")
    assert not row_verifies(TABLE, ROW, None, b"value", old)
    with override_settings(SECRET_KEY_FALLBACKS=["the previous key " * 4]):
        assert row_verifies(TABLE, ROW, None, b"value", old)


def refused_start(continuation: Continuation) -> None:
    require_row(TABLE, ROW, None, b"edited at rest", None)


@pytest.mark.django_db
def test_a_continuation_whose_start_fails_its_mac_is_refused_not_crashed() -> None:
    resumed = resume_pause(mint().token, {"ok": True})
    result = continue_once(resumed, refused_start)
    assert result.ran is False and result.reason is not None and "has no MAC" in result.reason
    pause = Pause.objects.get(jti=resumed.claims.jti)
    assert pause.continuation == ContinuationState.REFUSED
    assert pause.continuation_reason == result.reason
    assert lifecycle_status().failed_continuations == 1
    assert continue_once(resumed, refused_start) == ContinueResult(
        ran=False, reason=f"continuation failed before: {result.reason}"
    )


@pytest.mark.django_db(transaction=True)
async def test_an_async_continuation_whose_start_fails_its_mac_is_refused_not_crashed() -> None:
    from asgiref.sync import sync_to_async

    resumed = await sync_to_async(resume_pause)((await sync_to_async(mint)()).token, {"ok": True})
    result = await acontinue_once(resumed, refused_start)
    assert result.ran is False and result.reason is not None and "has no MAC" in result.reason
    pause = await Pause.objects.aget(jti=resumed.claims.jti)
    assert pause.continuation == ContinuationState.REFUSED


@pytest.mark.parametrize(
    ("identity", "key_id", "value"),
    [
        (ROW, None, None),
        (ROW, "k1", b""),
        (ROW, None, "caf\u00e9"),
        (("t", 7), "k", b"\x00\xff" * 300),
        (ROW, "k1", memoryview(b"as PostgreSQL hands bytes back")),
    ],
)
def test_every_mac_is_djangos_salted_hmac_of_the_row(identity: Any, key_id: Any, value: Any) -> None:
    from django.conf import settings
    from django.utils.crypto import salted_hmac

    from turnstate_app.integrity import _SALT, _header

    header = _header(TABLE, identity, key_id, value)
    body = b"" if value is None else b"\x00" + (value.encode() if isinstance(value, str) else bytes(value))
    expected = salted_hmac(_SALT, header + body, secret=settings.SECRET_KEY, algorithm="sha256").hexdigest()
    assert row_mac(TABLE, identity, key_id, value) == expected
    with override_settings(SECRET_KEY="another key"):
        assert row_mac(TABLE, identity, key_id, value) != expected


@pytest.mark.parametrize(
    ("table", "identity", "key_id", "value", "recorded"),
    [
        (TABLE, ROW, None, None, "9ce548e8f282fb94c2a22cf60dc9339ef46d67a8dd33848eb683222499b0a201"),
        (TABLE, ROW, "k1", b"", "cc71201798c231696299c4608aeeef2d699fba162345c47ff69951435d5103ed"),
        (TABLE, ROW, None, "caf\u00e9", "72cadd8d91e50d20656126c70d85c0d9ec8c47fec8a11ce805bf69b4e28cf304"),
        (
            "turnstate_langgraph.CheckpointWrite",
            ("t\u00e9", "", "cp", "task", -1, None, "ch|an:nel", "msgpack"),
            "k",
            b"\x00\xff" * 300,
            "7a2ef7aba4d05d1eb0a0fe1c9733a03a70de7da8ad6534b9e6bcec6a8695db89",
        ),
        (
            "turnstate_langgraph.ChannelBlob",
            ("t", "h", "messages", "00000000000000000000000000000002.0.5", "bytes"),
            None,
            memoryview(b"m" * 70000),
            "42fd758a850f845a2001af8055ac997627629c230acc29f1032ff42dbfe6d652",
        ),
    ],
)
@override_settings(SECRET_KEY="turnstate-tests-only")
def test_macs_recorded_by_earlier_releases_still_verify(
    table: str, identity: Any, key_id: Any, value: Any, recorded: str
) -> None:
    """MACs as an earlier release wrote them (literal, not recomputed): rows already stored keep
    verifying, whatever way the MAC is computed now."""
    assert row_mac(table, identity, key_id, value) == recorded
    assert row_verifies(table, identity, key_id, value, recorded)
    assert not row_verifies(table, identity, key_id, value, recorded[:-1] + "0")
    assert not row_verifies(table, identity, key_id, value, "\u00e9" * MAC_LENGTH)  # never an error
