"""Races in real processes, each interleaving forced, so a broken guarantee fails every run.

One side runs in this process inside an open transaction and holds its row locks; the other
runs in a spawned process and is let go only once the database shows it waiting on that
lock (or, for the purge, once it has made its decision). Answer against answer is in
test_pauses_across_processes and test_lifecycle_hardening.

SQLite admits one writer at a time: a second writer never gets as far as a row lock, so
these interleavings cannot arise there and the forced races run on PostgreSQL and MariaDB.
The unforced, repeated variants (``-m races``, ``make test-races``) run everywhere.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, connections, transaction
from django.utils import timezone

from tests import processes
from tests.pause_helpers import age, mint, mint_fields
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pauses import MintedPause, mint_pause, resume_pause

pytestmark = pytest.mark.django_db(transaction=True)
SPAWN = multiprocessing.get_context("spawn")
ONE_WRITER = pytest.mark.skipif(
    connections["default"].vendor == "sqlite",
    reason="SQLite admits one writer at a time: no second writer ever waits on a row lock",
)

LOCK_WAITERS = {
    "postgresql": (
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE wait_event_type = 'Lock' AND datname = current_database()"
    ),
    "mysql": (
        "SELECT count(*) FROM information_schema.processlist WHERE command = 'Query' "
        "AND (info LIKE 'UPDATE%%' OR info LIKE 'DELETE%%' OR info LIKE 'INSERT%%' "
        "OR info LIKE 'SELECT%%FOR UPDATE%%') "
        "AND id <> CONNECTION_ID()"
    ),
}


@pytest.fixture
def observer() -> Iterator[Any]:
    """A connection of its own, in autocommit, to watch the others wait."""
    watching = connections.create_connection("default")
    yield watching
    watching.close()


def someone_waits_on_a_lock(observer: Any) -> bool:
    with observer.cursor() as cursor:
        cursor.execute(LOCK_WAITERS[observer.vendor])
        return bool(cursor.fetchone()[0])


def wait_until_waiting(observer: Any, other: Future[Any] | Callable[[], bool], timeout: float = 60.0) -> None:
    """Until the other side waits on a lock; fails if it finished (or timed out) without waiting."""
    done = other.done if isinstance(other, Future) else other
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if someone_waits_on_a_lock(observer):
            return
        if done():
            result = other.result() if isinstance(other, Future) else None
            raise AssertionError(f"the other side never waited on the lock; it ended with {result!r}")
        time.sleep(0.02)
    raise AssertionError(f"nothing waited on a lock within {timeout}s")


@contextmanager
def elsewhere(work: Callable[..., Any], *args: Any) -> Iterator[Future[Any]]:
    with ProcessPoolExecutor(1, mp_context=SPAWN) as pool:
        yield pool.submit(work, dict(connection.settings_dict), *args)


def keys_of(thread_id: str) -> list[str]:
    return sorted(CheckpointMetadata.objects.filter(thread_id=thread_id).values_list("key", flat=True))


def assert_no_answer_without_its_ledger_row() -> None:
    answered = {f"answer:{jti}" for jti in Pause.objects.answered().values_list("jti", flat=True)}
    stored = set(CheckpointMetadata.objects.filter(key__startswith="answer:").values_list("key", flat=True))
    assert stored == answered, f"answer rows {sorted(stored - answered)} have no answered ledger row"


# -- answer vs erase_thread ------------------------------------------------------------------


@ONE_WRITER
def test_an_answer_waiting_on_an_erasure_is_a_404(observer: Any) -> None:
    minted = mint(1)
    with elsewhere(processes.answer_over_rest, minted.token, "late") as answer:
        with transaction.atomic():
            from turnstate_app.retention import erase_thread

            erase_thread(minted.claims.thread_id)  # the erasure holds the ledger row's lock
            wait_until_waiting(observer, answer)  # the answer read "pending" and queued on it
        status, body = answer.result(timeout=60)
    assert (status, body["code"]) == (404, "not_found"), body
    assert not Pause.objects.exists() and keys_of(minted.claims.thread_id) == []
    assert_no_answer_without_its_ledger_row()


@ONE_WRITER
def test_an_erasure_waiting_on_an_answer_removes_everything(observer: Any) -> None:
    minted = mint(2)
    with elsewhere(processes.erase_thread_elsewhere, minted.claims.thread_id) as erasure:
        with transaction.atomic():
            resume_pause(minted.token, "first")  # the answer holds the ledger row's lock
            wait_until_waiting(observer, erasure)
        assert erasure.result(timeout=60) == "erased"
    assert not Pause.objects.exists()
    assert keys_of(minted.claims.thread_id) == []  # the answer row went too
    assert_no_answer_without_its_ledger_row()


# -- answer vs deleting the person who owns the pause ----------------------------------------


@ONE_WRITER
def test_an_answer_waiting_on_the_owners_deletion_is_not_found(observer: Any) -> None:
    owner = get_user_model().objects.create_user("leaving")
    minted = mint(3, owner=owner)
    with elsewhere(processes.answer_and_name, minted.token, "late") as answer:
        with transaction.atomic():
            owner.delete()  # pre_delete purges the pauses and their rows
            wait_until_waiting(observer, answer)
        assert answer.result(timeout=60) == "PauseCheckpointNotFoundError"
    assert not Pause.objects.exists() and keys_of(minted.claims.thread_id) == []
    assert_no_answer_without_its_ledger_row()


@ONE_WRITER
def test_the_owners_deletion_waiting_on_an_answer_removes_everything(observer: Any) -> None:
    owner = get_user_model().objects.create_user("leaving-late")
    minted = mint(4, owner=owner)
    with elsewhere(processes.delete_user_elsewhere, owner.pk) as deletion:
        with transaction.atomic():
            resume_pause(minted.token, "first")
            wait_until_waiting(observer, deletion)
        assert deletion.result(timeout=60) == "deleted"
    assert not Pause.objects.exists()
    assert_no_answer_without_its_ledger_row()
    assert keys_of(minted.claims.thread_id) == []


# -- answer vs expiry: answered wins ---------------------------------------------------------


@ONE_WRITER
def test_an_expiry_waiting_on_an_answer_changes_nothing(observer: Any) -> None:
    minted = mint(5)
    later = timezone.now() + timedelta(days=400)  # past any pause's age
    with elsewhere(processes.expire_elsewhere, minted.claims.jti, later.isoformat()) as expiry:
        with transaction.atomic():
            resume_pause(minted.token, "first")
            wait_until_waiting(observer, expiry)
        assert expiry.result(timeout=60) == 0
    assert Pause.objects.get().status == "answered"
    assert_no_answer_without_its_ledger_row()


@ONE_WRITER
def test_turnstate_expire_waiting_on_an_answer_keeps_it_answered(observer: Any) -> None:
    minted = mint(6)
    expires_at = timezone.now() + timedelta(seconds=1)
    Pause.objects.filter(jti=minted.claims.jti).update(expires_at=expires_at)
    with ProcessPoolExecutor(1, mp_context=SPAWN) as pool:
        with transaction.atomic():
            resume_pause(minted.token, "in time")  # answered within its age
            time.sleep(max(0.0, (expires_at - timezone.now()).total_seconds()) + 0.05)
            command = pool.submit(processes.expire_command_elsewhere, dict(connection.settings_dict))
            wait_until_waiting(observer, command)  # the command found it overdue and queued
        output = command.result(timeout=60)
    assert "expired 0 pause(s)" in output, output
    assert Pause.objects.get().status == "answered"
    assert_no_answer_without_its_ledger_row()


@ONE_WRITER
def test_an_answer_waiting_on_an_expiry_is_refused_as_expired(observer: Any) -> None:
    minted = mint(7)
    with elsewhere(processes.answer_and_name, minted.token, "late") as answer:
        with transaction.atomic():
            Pause.objects.expire(now=timezone.now() + timedelta(days=400), jti=minted.claims.jti)
            wait_until_waiting(observer, answer)
        assert answer.result(timeout=60) == "PauseExpiredError"
    assert Pause.objects.get().status == "expired"
    assert_no_answer_without_its_ledger_row()


# -- mint vs purge on a shared request key ---------------------------------------------------


def settled_and_old(fields: dict[str, Any]) -> MintedPause:
    minted = mint_pause(**fields)
    resume_pause(minted.token, "long ago")
    age(minted, days=90)
    return minted


@ONE_WRITER
def test_a_mint_committing_while_purge_decides_keeps_its_request_row(observer: Any) -> None:
    fields = mint_fields(8)
    old = settled_and_old(fields)
    request_key = f"ask_user_request:{old.claims.tool_call_id}"
    decided, go, results = SPAWN.Event(), SPAWN.Event(), SPAWN.Queue()
    cutoff = (timezone.now() - timedelta(days=30)).isoformat()
    purge = SPAWN.Process(
        target=processes.purge_pausing_after_the_decision,
        args=(dict(connection.settings_dict), cutoff, decided, go, results),
    )
    purge.start()
    minted: list[MintedPause] = []
    try:
        assert decided.wait(60), "the purge never reached its decision"

        def retried_mint() -> None:  # the retried tool call: same thread, checkpoint, tool call
            try:
                minted.append(mint_pause(**fields))
            except Exception as exc:  # reported below, by the assertion on what was minted
                minted.append(exc)  # type: ignore[arg-type]
            finally:
                connections.close_all()

        minting = threading.Thread(target=retried_mint)
        minting.start()
        # The mint commits while purge holds its decision, or (once purge locks what it
        # decided on) waits on that lock: either way purge goes on only then.
        try:
            wait_until_waiting(observer, lambda: not minting.is_alive(), timeout=30)
        except AssertionError:
            assert not minting.is_alive(), "the mint neither committed nor waited on a lock"
        go.set()
        minting.join(60)
        outcome = results.get(timeout=60)
    finally:
        go.set()
        purge.join(60)
    assert outcome == ("purged", 1), outcome
    [new] = minted
    assert isinstance(new, MintedPause), new
    assert list(Pause.objects.values_list("jti", flat=True)) == [new.claims.jti]
    assert keys_of(new.claims.thread_id) == sorted([request_key, f"turn_state:{new.claims.jti}"])
    resumed = resume_pause(new.token, "now")
    assert resumed.checkpoint is not None


# -- timing only: many unforced repetitions (make test-races) --------------------------------

REPETITIONS = 20


@pytest.mark.races
def test_answers_and_erasures_unforced_never_leave_an_answer_without_its_ledger_row() -> None:
    pauses = [mint() for _ in range(REPETITIONS)]
    settings_dict = dict(connection.settings_dict)
    with ProcessPoolExecutor(4, mp_context=SPAWN) as pool:
        answers = [pool.submit(processes.answer_and_name, settings_dict, p.token, "x") for p in pauses]
        erasures = [
            pool.submit(processes.erase_thread_elsewhere, settings_dict, p.claims.thread_id) for p in pauses
        ]
        outcomes = {f.result(timeout=120) for f in answers}
        assert {f.result(timeout=120) for f in erasures} == {"erased"}
    assert outcomes <= {"answered", "PauseCheckpointNotFoundError"}, outcomes
    assert not Pause.objects.exists()
    assert_no_answer_without_its_ledger_row()


@pytest.mark.races
def test_answers_and_expiry_unforced_answered_always_wins() -> None:
    pauses = [mint() for _ in range(REPETITIONS)]
    later = (timezone.now() + timedelta(days=400)).isoformat()
    settings_dict = dict(connection.settings_dict)
    with ProcessPoolExecutor(4, mp_context=SPAWN) as pool:
        answers = [pool.submit(processes.answer_and_name, settings_dict, p.token, "x") for p in pauses]
        expiries = [
            pool.submit(processes.expire_elsewhere, settings_dict, p.claims.jti, later) for p in pauses
        ]
        outcomes = [f.result(timeout=120) for f in answers]
        expired = [f.result(timeout=120) for f in expiries]
    for pause, outcome, changed in zip(pauses, outcomes, expired, strict=True):
        status = Pause.objects.get(jti=pause.claims.jti).status
        assert (outcome, changed, status) in {
            ("answered", 0, "answered"),
            ("PauseExpiredError", 1, "expired"),
        }
    assert_no_answer_without_its_ledger_row()
