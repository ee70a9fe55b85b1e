"""A key ring that breaks its rule fails closed: an error naming the thread and the ring, on
write and on read, never a value written in clear and never a 500."""

from __future__ import annotations

from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from tests.api_support import RESUME, pause_url
from tests.encryption_support import GIVES, KEY_A, KEY_B, SECRET, STANDARD_KEY, mint_secret
from turnstate_app.errors import KeyRingError
from turnstate_app.models import CheckpointMetadata, Pause, PauseStatus
from turnstate_app.pauses import resume_pause

pytestmark = pytest.mark.django_db(transaction=False)

RING_PATH = "tests.encryption_support.gives"

BROKEN: dict[str, dict[str, Any]] = {
    "a key as a str": {"keys": KEY_A},
    "None": {"keys": None},
    "no keys": {"keys": []},
    "a list with a bad key": {"keys": [KEY_A, "not-a-key"]},
    "a standard base64 key": {"keys": [STANDARD_KEY]},
    "an exception": {"raises": RuntimeError("the tenant store is down")},
}


@pytest.fixture
def ring(turnstate_settings: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The ``gives`` ring, working ([KEY_A]) until a test breaks it."""
    GIVES.clear()
    GIVES["keys"] = [KEY_A]
    turnstate_settings["ENCRYPTION_KEY_RING"] = RING_PATH
    yield GIVES
    GIVES.clear()


def break_ring(ring: dict[str, Any], how: str) -> None:
    ring.clear()
    ring.update(BROKEN[how])


def assert_names_thread_and_ring(error: KeyRingError, thread_id: str) -> None:
    message = str(error)
    assert repr(thread_id) in message and RING_PATH in message
    assert KEY_A not in message and STANDARD_KEY not in message and "not-a-key" not in message


@pytest.mark.parametrize("how", list(BROKEN))
def test_a_write_under_a_broken_ring_is_refused_and_writes_nothing(ring: dict[str, Any], how: str) -> None:
    break_ring(ring, how)
    with pytest.raises(KeyRingError) as caught:
        mint_secret("acme/1")
    assert_names_thread_and_ring(caught.value, "acme/1")
    assert not CheckpointMetadata.objects.exists() and not Pause.objects.exists()


@pytest.mark.parametrize("how", list(BROKEN))
def test_a_read_under_a_broken_ring_is_refused_and_consumes_nothing(ring: dict[str, Any], how: str) -> None:
    minted = mint_secret("acme/2")
    break_ring(ring, how)
    with pytest.raises(KeyRingError) as caught:
        resume_pause(minted.token, "yes")
    assert_names_thread_and_ring(caught.value, "acme/2")
    assert Pause.objects.get(jti=minted.claims.jti).status == PauseStatus.PENDING
    ring.clear()
    ring["keys"] = [KEY_B, KEY_A]  # the keys are back: the pause is answered as if nothing happened
    assert resume_pause(minted.token, "yes").checkpoint is not None


@pytest.mark.parametrize("how", ["a key as a str", "an exception"])
def test_the_rest_api_answers_503_unavailable_for_a_pause_and_its_resume(
    ring: dict[str, Any], staff: Any, how: str
) -> None:
    minted = mint_secret("acme/3")
    break_ring(ring, how)
    detail = staff.get(pause_url(minted.claims.jti))
    answered = staff.post(RESUME, {"token": minted.token, "answer": "yes"}, format="json")
    for response in (detail, answered):
        assert response.status_code == 503, response.content
        assert response["Content-Type"] == "application/json"
        assert response.json()["code"] == "unavailable"
        assert SECRET not in response.content.decode() and KEY_A not in response.content.decode()
    assert Pause.objects.get(jti=minted.claims.jti).status == PauseStatus.PENDING


def test_the_admins_pause_page_shows_the_error_instead_of_a_500(
    ring: dict[str, Any], admin_client: Any
) -> None:
    minted = mint_secret("acme/4")
    resume_pause(minted.token, {"passport": SECRET})
    break_ring(ring, "an exception")
    pause = Pause.objects.get(jti=minted.claims.jti)
    page = admin_client.get(reverse("admin:turnstate_app_pause_change", args=[pause.pk]))
    assert page.status_code == 200
    text = page.content.decode()
    assert "errornote" in text and RING_PATH in text and "acme/4" in text and SECRET not in text
    row = CheckpointMetadata.objects.get(key=pause.request_key)
    row_page = admin_client.get(reverse("admin:turnstate_app_checkpointmetadata_change", args=[row.pk]))
    assert row_page.status_code == 200 and RING_PATH in row_page.content.decode()
    whole = admin_client.get(reverse("admin:turnstate_app_checkpointmetadata_value", args=[row.pk]))
    assert whole.status_code == 503 and RING_PATH in whole.content.decode()


@pytest.mark.parametrize("keys", [KEY_A, [STANDARD_KEY]], ids=["a str", "a standard base64 key"])
def test_settings_keys_that_cannot_be_used_refuse_the_write_instead_of_storing_it_clear(
    turnstate_settings: dict[str, Any], keys: Any
) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = keys
    with pytest.raises(KeyRingError) as caught:
        mint_secret("t-settings")
    assert "ENCRYPTION_KEYS" in str(caught.value) and "'t-settings'" in str(caught.value)
    assert not CheckpointMetadata.objects.exists()


def test_a_key_fernet_accepts_without_padding_writes_and_reads_as_the_padded_key(
    turnstate_settings: dict[str, Any],
) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A.rstrip("=")]
    minted = mint_secret()
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    assert resume_pause(minted.token, "yes").checkpoint is not None


@pytest.mark.parametrize("dry_run", [False, True], ids=["rotate", "dry run"])
def test_rotate_keys_under_a_broken_ring_stops_with_a_command_error_naming_the_ring(
    ring: dict[str, Any], dry_run: bool
) -> None:
    mint_secret("acme/1")
    break_ring(ring, "an exception")
    with pytest.raises(CommandError) as caught:
        call_command("turnstate_rotate_keys", *(["--dry-run"] if dry_run else []), stdout=StringIO())
    assert RING_PATH in str(caught.value) and "acme/1" in str(caught.value)
