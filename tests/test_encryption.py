"""Values encrypted at rest: the store's requests, turn states and answers; keys rotated in place."""

from __future__ import annotations

import io
import multiprocessing
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection, connections
from django.urls import reverse

from tests.encryption_support import KEY_A, KEY_B, RING, SECRET, churn, mint_secret, rotate_until_killed
from turnstate_app.checks import check_settings
from turnstate_app.errors import PayloadBindingError
from turnstate_app.managers import claims_of
from turnstate_app.models import CheckpointMetadata, Pause, RowKind
from turnstate_app.pauses import resume_pause
from turnstate_app.ports import ModelCheckpointCommandPort, get_default_store

pytestmark = pytest.mark.django_db(transaction=False)


def raw_values() -> list[tuple[str, str, str | None]]:
    """(key, value, key id) of every store row, as a SELECT sees them: no decryption."""
    table = connection.ops.quote_name(CheckpointMetadata._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {connection.ops.quote_name('key')}, value, encryption_key_id FROM {table}")
        return [(str(k), str(v), i) for k, v, i in cursor.fetchall()]


def rotate(*args: str) -> str:
    out = io.StringIO()
    call_command("turnstate_rotate_keys", *args, stdout=out)
    return out.getvalue()


def test_a_mint_and_a_resume_leave_no_secret_in_the_store(turnstate_settings: dict[str, Any]) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    minted = mint_secret()
    resumed = resume_pause(minted.token, {"passport": SECRET})
    rows = raw_values()
    assert {key.split(":")[0] for key, _, _ in rows} >= {"ask_user_request", "turn_state", "answer"}
    assert not [key for key, value, _ in rows if SECRET in value]
    assert all(key_id for key, _, key_id in rows if not key.startswith("continuation:"))
    # Read back through the store as written.
    assert resumed.checkpoint is not None and resumed.checkpoint.prompt == f"My passport is {SECRET}"
    assert get_default_store().read_answer_sync(minted.claims) == f'{{"passport":"{SECRET}"}}'


def test_max_value_bytes_applies_to_the_plaintext(turnstate_settings: dict[str, Any]) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    turnstate_settings["MAX_VALUE_BYTES"] = 1000
    port = ModelCheckpointCommandPort()
    value = "x" * 1000  # its token is far larger than 1000 bytes
    port.write_metadata_sync(thread_id="t", checkpoint_id="c", key="answer:j", value=value, task_id=None)
    assert port.read_metadata_sync(thread_id="t", checkpoint_id="c", key="answer:j") == value


def test_claims_stay_clear_so_they_compare_by_value(turnstate_settings: dict[str, Any]) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    port = ModelCheckpointCommandPort()
    assert port.claim_metadata_sync(
        thread_id="t", checkpoint_id="c", key="continuation:j", value="v", task_id=None
    )
    assert port.release_metadata_sync(thread_id="t", checkpoint_id="c", key="continuation:j", value="v")


def test_clear_rows_stay_readable_and_rotation_encrypts_them(turnstate_settings: dict[str, Any]) -> None:
    minted = mint_secret()  # no keys: stored clear, as before encryption was turned on
    assert all(key_id is None for _, _, key_id in raw_values())
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    assert "2 clear, 0 on an old key" in rotate("--dry-run")  # the request and the turn state
    assert "still clear" in rotate("--dry-run")
    out = rotate("--batch-size", "1")
    assert "2 row(s) re-encrypted in 2 batch(es)" in out and "batch 1: 1 re-encrypted" in out
    assert not [key for key, value, _ in raw_values() if SECRET in value]
    assert "0 clear, 0 on an old key, 2 on the current key, 0 unreadable" in rotate("--dry-run")
    assert resume_pause(minted.token, "yes").checkpoint is not None


def test_rotation_moves_every_row_to_the_first_key(turnstate_settings: dict[str, Any]) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    minted = [mint_secret() for _ in range(3)]
    old_ids = {key_id for _, _, key_id in raw_values()}
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_B, KEY_A]
    assert "0 clear, 6 on an old key, 0 on the current key" in rotate("--dry-run")
    assert "6 row(s) re-encrypted" in rotate()
    new_ids = {key_id for _, _, key_id in raw_values()}
    assert len(new_ids) == 1 and not new_ids & old_ids
    assert "0 row(s) re-encrypted" in rotate()  # resumable: a second run finds nothing left
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_B]  # the old key retired
    assert all(resume_pause(m.token, "yes").checkpoint is not None for m in minted)


def test_a_missing_key_is_an_unreadable_record_listed_for_operators(
    turnstate_settings: dict[str, Any], staff: Any
) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    minted = mint_secret()
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_B]  # KEY_A is gone
    with pytest.raises(PayloadBindingError) as caught:
        resume_pause(minted.token, "yes")
    assert SECRET not in str(caught.value) and "not among the keys" in str(caught.value)
    surveyed = rotate("--dry-run")
    assert "2 unreadable (key gone)" in surveyed and f"thread={minted.claims.thread_id!r}" in surveyed
    assert "0 row(s) re-encrypted" in rotate() and "2 unreadable" in rotate()
    row = CheckpointMetadata.objects.get(key=f"ask_user_request:{minted.claims.tool_call_id}")
    response = staff.get(f"/api/turnstate/checkpoints/{row.pk}/")
    assert response.status_code == 200
    assert response.json()["value"] is None and "not among the keys" in response.json()["unreadable"]
    detail = staff.get(f"/api/turnstate/pauses/{minted.claims.jti}/")
    assert detail.status_code == 200 and detail.json()["request"] is None
    answered = staff.post(
        "/api/turnstate/pauses/resume/", {"token": minted.token, "answer": "yes"}, format="json"
    )
    assert answered.status_code == 400 and answered.json()["code"] == "record_mismatch"
    assert SECRET not in response.content.decode() + detail.content.decode()


def test_staff_see_decrypted_values(
    turnstate_settings: dict[str, Any], staff: Any, admin_client: Any
) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    minted = mint_secret()
    row = CheckpointMetadata.objects.get(kind=RowKind.REQUEST)
    body = staff.get(f"/api/turnstate/checkpoints/{row.pk}/").json()
    assert SECRET in body["value"] and body["unreadable"] is None
    assert SECRET in staff.get(f"/api/turnstate/pauses/{minted.claims.jti}/").json()["request"]["question"]
    pk = Pause.objects.get(jti=minted.claims.jti).pk
    pause_page = admin_client.get(reverse("admin:turnstate_app_pause_change", args=[pk]))
    assert pause_page.status_code == 200 and SECRET in pause_page.content.decode()


def test_a_key_ring_gives_each_thread_its_keys_and_dropping_them_shreds_only_that_thread(
    turnstate_settings: dict[str, Any],
) -> None:
    RING.clear()
    RING.update({"acme": [KEY_A], "globex": [KEY_B]})
    turnstate_settings["ENCRYPTION_KEY_RING"] = "tests.encryption_support.ring"
    acme, globex = mint_secret("acme/1"), mint_secret("globex/1")
    ids = {key.split(":")[0]: key_id for key, _, key_id in raw_values()}
    assert len({key_id for _, _, key_id in raw_values()}) == 2 and ids
    del RING["acme"]  # acme leaves: its keys are dropped
    try:
        with pytest.raises(PayloadBindingError):
            resume_pause(acme.token, "yes")
        assert resume_pause(globex.token, "yes").checkpoint is not None
        surveyed = rotate("--dry-run")
        assert "2 unreadable" in surveyed and "thread='acme/1'" in surveyed and "globex" not in surveyed
        call_command("turnstate_purge", "--thread", "acme/1", stdout=io.StringIO())
        assert "0 unreadable" in rotate("--dry-run")
    finally:
        RING.clear()


@pytest.mark.parametrize(
    ("keys", "fragment"),
    [
        (["not-a-key"], "key #0"),
        ([KEY_A, "c2hvcnQ="], "key #1 decodes to 5 bytes"),
        ("one-key", "must be a list"),
    ],
)
def test_a_malformed_key_is_refused_at_start_up_with_how_to_make_one(
    turnstate_settings: dict[str, Any], keys: Any, fragment: str
) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = keys
    (error,) = [m for m in check_settings() if m.id == "turnstate.E019"]
    assert fragment in error.msg and "Fernet.generate_key()" in (error.hint or "")
    assert "not-a-key" not in error.msg  # a key, even a bad one, is never echoed


def test_an_unusable_key_ring_is_refused(turnstate_settings: dict[str, Any]) -> None:
    turnstate_settings["ENCRYPTION_KEY_RING"] = "tests.encryption_support.nothing_here"
    assert [m.id for m in check_settings()] == ["turnstate.E021"]


def test_rotation_without_keys_says_there_is_nothing_to_rotate_to() -> None:
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="No encryption keys"):
        rotate()


@pytest.mark.django_db(transaction=True)
def test_rotation_under_concurrent_mints_and_answers_in_other_processes_loses_nothing(
    turnstate_settings: dict[str, Any],
) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    waiting = [mint_secret() for _ in range(8)]
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_B, KEY_A]  # this process rotates to KEY_B
    settings_dict = dict(connection.settings_dict)
    # A rolling deploy: one writer still encrypts with the old key (reading the new), one with the new.
    configs = [[KEY_A, KEY_B], [KEY_B, KEY_A]]
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        work = [
            pool.submit(churn, settings_dict, configs[w], w, [m.token for m in waiting[w::2]], 16)
            for w in range(2)
        ]
        runs = 0
        while not all(f.done() for f in work) or runs == 0:
            rotate("--batch-size", "3")
            runs += 1
        results = [f.result() for f in work]
    rotate()  # what was written on the old key meanwhile
    assert "0 on an old key" in rotate("--dry-run") and "0 unreadable" in rotate("--dry-run")
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_B]  # nothing may still need KEY_A
    port = ModelCheckpointCommandPort()
    for worker, result in enumerate(results):
        assert (
            port.read_metadata_sync(thread_id=f"row-{worker}", checkpoint_id="cp", key="answer:churn")
            == (result["last"])
        )
        for thread in result["minted"]:
            pause = Pause.objects.get(thread_id=thread)
            assert get_default_store().load_sync(claims_of(pause)).prompt == f"My passport is {SECRET}"
    for number, minted in enumerate(waiting):
        answer = get_default_store().read_answer_sync(minted.claims)
        assert answer == f'{{"worker":{number % 2}}}'
        assert get_default_store().load_sync(minted.claims).prompt == f"My passport is {SECRET}"
    assert not [key for key, value, _ in raw_values() if SECRET in value]


@pytest.mark.django_db(transaction=True)
def test_a_row_written_between_the_rotations_read_and_its_update_keeps_what_its_writer_wrote(
    turnstate_settings: dict[str, Any],
) -> None:
    """The writer runs on its own connection at the very moment the rotation's UPDATE is sent."""
    port = ModelCheckpointCommandPort()
    place = {"thread_id": "t", "checkpoint_id": "c", "key": "answer:j"}
    port.write_metadata_sync(**place, value='"clear, before keys"', task_id=None)
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]

    failures: list[BaseException] = []

    def write() -> None:
        try:
            port.write_metadata_sync(**place, value='"written meanwhile"', task_id=None)
        except BaseException as exc:  # reported by the test, not lost in the thread
            failures.append(exc)
        finally:
            connections.close_all()

    def write_elsewhere(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        result = execute(sql, params, many, context)
        table = CheckpointMetadata._meta.db_table
        if sql.startswith("SELECT") and table in sql and "encryption_key_id" in sql and not failures:
            # The rotation's batch has just read the row: another connection writes it now.
            writer = threading.Thread(target=write)
            writer.start()
            writer.join()
        return result

    with connection.execute_wrapper(write_elsewhere):
        out = rotate()
    assert not failures
    assert "0 row(s) re-encrypted" in out and "1 written meanwhile" in out
    assert port.read_metadata_sync(**place) == '"written meanwhile"'  # not lost, not encrypted twice
    assert "1 on the current key" in rotate("--dry-run")


WITHOUT_CRYPTOGRAPHY = textwrap.dedent(
    """
    import sys

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "cryptography":
                raise ModuleNotFoundError(f"blocked: {name}")
            return None

    sys.meta_path.insert(0, Blocker())
    import os
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    import django
    from django.conf import settings

    django.setup()
    import turnstate_app.encryption, turnstate_app.models, turnstate_app.pauses, turnstate_app.rotation
    from turnstate_app.checks import check_settings

    assert "cryptography" not in sys.modules
    assert [m.id for m in check_settings()] == []
    settings.TURNSTATE = {"ENCRYPTION_KEYS": ["%s"]}
    assert [m.id for m in check_settings()] == ["turnstate.E020"], check_settings()
    print("core imported without cryptography")
    """
)


def test_the_core_imports_without_cryptography_and_keys_without_it_are_refused() -> None:
    code = WITHOUT_CRYPTOGRAPHY % KEY_A
    root = Path(__file__).resolve().parent.parent
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "core imported without cryptography" in result.stdout


@pytest.mark.django_db(transaction=True)
def test_a_rotation_killed_midway_is_resumed_by_running_it_again(turnstate_settings: dict[str, Any]) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    minted = [mint_secret() for _ in range(4)]  # 8 rows
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_B, KEY_A]
    spawn = multiprocessing.get_context("spawn")
    started = spawn.Event()
    child = spawn.Process(
        target=rotate_until_killed, args=(dict(connection.settings_dict), [KEY_B, KEY_A], started)
    )
    child.start()
    try:
        assert started.wait(60)
    finally:
        child.kill()
        child.join()
    assert "5 on an old key, 3 on the current key" in rotate("--dry-run")
    assert "5 row(s) re-encrypted" in rotate()
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_B]
    assert all(resume_pause(m.token, "yes").checkpoint is not None for m in minted)
