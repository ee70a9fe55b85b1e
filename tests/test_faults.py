"""Faults at each statement of mint, resume and hand-off, injected by PostgreSQL triggers.

A trigger on one of the app's tables fails one chosen statement: it raises a database error
(as a lost connection reports it), ends its own session, or sleeps past ``statement_timeout``.
For each, the caller sees the documented outcome, the database holds all or nothing of the
step, and once the trigger is gone a retry succeeds exactly once.

PostgreSQL only: the other databases are covered by the tests that fail statements in Python.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import DatabaseError, InterfaceError, OperationalError, connection, connections
from rest_framework.test import APIClient

from tests.pause_helpers import mint, mint_fields
from turnstate_app.errors import PauseAlreadyAnsweredError
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pauses import MintedPause, mint_pause, redeliver, resume_pause
from turnstate_app.pauses.handoff import ResumedPause

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connections["default"].vendor != "postgresql",
        reason="faults are injected with PL/pgSQL triggers; other databases are covered by the "
        "tests that fail statements in Python (test_lifecycle_hardening, test_handoff)",
    ),
]

STORE = CheckpointMetadata._meta.db_table
LEDGER = Pause._meta.db_table

# The faults a trigger can inject. A raised error carries SQLSTATE 08006 (connection failure),
# the class a lost database reports, so the app sees the OperationalError it would see then.
FAULT_FUNCTION = """
CREATE OR REPLACE FUNCTION turnstate_fault() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_ARGV[0] = 'raise' THEN
        RAISE EXCEPTION 'injected fault at % on %', TG_OP, TG_TABLE_NAME USING ERRCODE = '08006';
    ELSIF TG_ARGV[0] = 'terminate' THEN
        PERFORM pg_terminate_backend(pg_backend_pid());
    ELSIF TG_ARGV[0] = 'sleep' THEN
        PERFORM pg_sleep(5);
    END IF;
    RETURN NEW;
END
$$
"""


@dataclass(frozen=True)
class Statement:
    """One statement of the lifecycle, as a trigger's table, event and condition."""

    table: str
    event: str
    when: str


# What the statement after a session ended raises: the driver's "the connection is closed",
# an OperationalError on psycopg 3, an InterfaceError on psycopg2. Both are a 503 over REST.
SESSION_GONE = (OperationalError, InterfaceError)

REQUEST_INSERT = Statement(STORE, "INSERT", "NEW.key LIKE 'ask_user_request:%'")
TURN_STATE_INSERT = Statement(STORE, "INSERT", "NEW.key LIKE 'turn_state:%'")
LEDGER_INSERT = Statement(LEDGER, "INSERT", "TRUE")
CONSUME = Statement(LEDGER, "UPDATE", "OLD.status = 'pending' AND NEW.status = 'answered'")
ANSWER_INSERT = Statement(STORE, "INSERT", "NEW.key LIKE 'answer:%'")
STAMP = Statement(LEDGER, "UPDATE", "OLD.handed_off_at IS NULL AND NEW.handed_off_at IS NOT NULL")


class Faults:
    """Installs triggers that fail chosen statements; :meth:`clear` drops them all."""

    def __init__(self) -> None:
        self.installed: list[tuple[str, str]] = []

    def inject(self, statement: Statement, fault: str = "raise") -> None:
        name = f"turnstate_fault_{len(self.installed)}"
        with connection.cursor() as cursor:
            cursor.execute(FAULT_FUNCTION)
            cursor.execute(
                f"CREATE TRIGGER {name} BEFORE {statement.event} ON {statement.table} FOR EACH ROW "
                f"WHEN ({statement.when}) EXECUTE FUNCTION turnstate_fault('{fault}')"
            )
        self.installed.append((name, statement.table))

    def clear(self) -> None:
        connection.close()  # a session the fault ended is unusable; the next query reconnects
        with connection.cursor() as cursor:
            for name, table in self.installed:
                cursor.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
            cursor.execute("DROP FUNCTION IF EXISTS turnstate_fault()")
        self.installed.clear()


@pytest.fixture
def faults() -> Iterator[Faults]:
    injected = Faults()
    yield injected
    injected.clear()


def store_keys() -> list[str]:
    return sorted(CheckpointMetadata.objects.values_list("key", flat=True))


def answer_rows() -> list[str]:
    return [key for key in store_keys() if key.startswith("answer:")]


def assert_no_half_pause() -> None:
    """No request or turn-state row without a ledger row that owns it."""
    owned = {(p.thread_id, p.checkpoint_id, p.request_key) for p in Pause.objects.all()}
    jtis = set(Pause.objects.values_list("jti", flat=True))
    for row in CheckpointMetadata.objects.all():
        if row.key.startswith(("ask_user_request:", "interrupt_payload:")):
            assert (row.thread_id, row.checkpoint_id, row.key) in owned, f"{row.key} has no ledger row"
        else:
            assert row.key.split(":", 1)[1] in jtis, f"{row.key} has no ledger row"


def assert_answered_exactly_when_stored() -> None:
    """An answer row exactly for every answered pause, and for no other."""
    answered = {f"answer:{jti}" for jti in Pause.objects.answered().values_list("jti", flat=True)}
    assert set(answer_rows()) == answered


def with_statement_timeout(run: Callable[[], Any]) -> Any:
    """Run ``run`` on this session with a 300 ms ``statement_timeout``."""
    with connection.cursor() as cursor:
        cursor.execute("SET statement_timeout = 300")
    try:
        return run()
    finally:
        # A pooled session outlives close(): the setting must not ride along into later tests.
        with contextlib.suppress(DatabaseError), connection.cursor() as cursor:
            cursor.execute("RESET statement_timeout")
        connection.close()


def test_a_statement_timeout_ends_with_the_fault() -> None:
    """Under Django's pool the session goes back to the pool: every pooled session is looked at."""
    with_statement_timeout(lambda: None)
    timeouts = set()
    for _ in range(12):
        with connection.cursor() as cursor:
            cursor.execute("SHOW statement_timeout")
            timeouts.add(cursor.fetchone()[0])
        connection.close()
    assert timeouts == {"0"}


SESSION_FAULTS = ["raise", "terminate", "statement_timeout"]


def inject(faults: Faults, statement: Statement, fault: str) -> None:
    faults.inject(statement, "sleep" if fault == "statement_timeout" else fault)


def attempt(fault: str, run: Callable[[], Any]) -> Any:
    return with_statement_timeout(run) if fault == "statement_timeout" else run()


# -- mint ------------------------------------------------------------------------------------


@pytest.mark.parametrize("fault", SESSION_FAULTS)
@pytest.mark.parametrize("statement", [REQUEST_INSERT, LEDGER_INSERT], ids=["request", "ledger"])
def test_a_mint_failing_at_the_request_or_ledger_raises_and_leaves_nothing(
    faults: Faults, statement: Statement, fault: str
) -> None:
    fields = mint_fields(1)
    inject(faults, statement, fault)
    with pytest.raises(DatabaseError):
        attempt(fault, lambda: mint_pause(**fields))
    faults.clear()
    assert store_keys() == [] and not Pause.objects.exists()

    retried = mint_pause(**fields)
    assert retried.resumable
    assert Pause.objects.count() == 1
    assert store_keys() == sorted(["ask_user_request:call-1", f"turn_state:{retried.claims.jti}"])
    assert_no_half_pause()


@pytest.mark.parametrize("fault", ["raise", "statement_timeout"])
def test_a_mint_whose_turn_state_insert_fails_is_answerable_but_not_resumable(
    faults: Faults, fault: str
) -> None:
    """The failed statement rolls back to its savepoint; the session goes on and mints."""
    fields = mint_fields(2)
    inject(faults, TURN_STATE_INSERT, fault)
    minted = attempt(fault, lambda: mint_pause(**fields))
    faults.clear()
    assert minted.resumable is False
    pause = Pause.objects.get()
    assert pause.jti == minted.claims.jti and pause.resumable is False
    assert store_keys() == ["ask_user_request:call-2"]  # the turn-state row rolled back alone
    assert_no_half_pause()
    assert resume_pause(minted.token, "yes").checkpoint is None  # answerable, not continuable

    retried = mint_pause(**fields)  # the run retries the tool call: a pause it can continue
    assert retried.resumable
    assert Pause.objects.count() == 2
    assert f"turn_state:{retried.claims.jti}" in store_keys()
    assert resume_pause(retried.token, "yes").checkpoint is not None
    with pytest.raises(PauseAlreadyAnsweredError):
        resume_pause(retried.token, "again")


def test_a_mint_whose_session_ends_at_the_turn_state_insert_raises_and_leaves_nothing(
    faults: Faults,
) -> None:
    """With the session gone the ledger row cannot be written either: no token, no rows."""
    fields = mint_fields(3)
    faults.inject(TURN_STATE_INSERT, "terminate")
    with pytest.raises(SESSION_GONE):
        mint_pause(**fields)
    faults.clear()
    assert store_keys() == [] and not Pause.objects.exists()

    retried = mint_pause(**fields)
    assert retried.resumable and Pause.objects.count() == 1
    assert_no_half_pause()


# -- resume ----------------------------------------------------------------------------------


@pytest.mark.parametrize("fault", SESSION_FAULTS)
@pytest.mark.parametrize("statement", [CONSUME, ANSWER_INSERT], ids=["consume", "answer"])
def test_a_resume_failing_at_the_consume_or_answer_keeps_the_pause_pending(
    faults: Faults, statement: Statement, fault: str
) -> None:
    minted = mint(4)
    inject(faults, statement, fault)
    with pytest.raises(OperationalError):
        attempt(fault, lambda: resume_pause(minted.token, "first"))
    faults.clear()
    assert Pause.objects.get().status == "pending"
    assert answer_rows() == []
    assert_answered_exactly_when_stored()

    assert resume_pause(minted.token, "retried").answer == "retried"
    with pytest.raises(PauseAlreadyAnsweredError):
        resume_pause(minted.token, "again")
    assert Pause.objects.get().status == "answered"
    [answer] = CheckpointMetadata.objects.filter(key=f"answer:{minted.claims.jti}")
    assert json.loads(answer.value) == "retried"
    assert_answered_exactly_when_stored()


def post_answer(client: APIClient, minted: MintedPause, answer: str) -> Any:
    return client.post(
        "/api/turnstate/pauses/resume/", {"token": minted.token, "answer": answer}, format="json"
    )


@pytest.mark.parametrize("fault", SESSION_FAULTS)
@pytest.mark.parametrize("statement", [CONSUME, ANSWER_INSERT], ids=["consume", "answer"])
def test_over_rest_a_resume_failing_in_the_database_is_a_json_503(
    faults: Faults, statement: Statement, fault: str
) -> None:
    minted = mint(5)
    client = APIClient()
    client.force_login(get_user_model().objects.create_user("answerer"))
    inject(faults, statement, fault)
    response = attempt(fault, lambda: post_answer(client, minted, "first"))
    faults.clear()
    assert response.status_code == 503, response.content
    assert response.json()["code"] == "unavailable"
    assert Pause.objects.get().status == "pending" and answer_rows() == []

    assert post_answer(client, minted, "retried").status_code == 200
    assert post_answer(client, minted, "again").status_code == 409
    assert_answered_exactly_when_stored()


# -- hand-off --------------------------------------------------------------------------------

HANDED: list[ResumedPause] = []
HANDED_LOCK = threading.Lock()


def counting_handler(resumed: ResumedPause) -> None:
    with HANDED_LOCK:
        HANDED.append(resumed)


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {timeout}s"
        time.sleep(0.02)


@pytest.mark.parametrize("fault", ["raise", "terminate"])
def test_a_failed_hand_off_stamp_keeps_the_answer_and_redelivery_stamps_it_once(
    faults: Faults, turnstate_settings: dict[str, Any], fault: str
) -> None:
    HANDED.clear()
    turnstate_settings["RESUME_HANDLER"] = "tests.test_faults.counting_handler"
    minted = mint(7)
    faults.inject(STAMP, fault)
    resumed = resume_pause(minted.token, "kept")  # the hand-off runs on a worker, after commit
    assert resumed.answer == "kept"
    wait_for(lambda: len(HANDED) == 1, "the handler was called")
    faults.clear()
    pause = Pause.objects.get()
    assert pause.status == "answered"
    assert [p.jti for p in Pause.objects.awaiting_handoff()] == [minted.claims.jti]
    assert_answered_exactly_when_stored()

    assert redeliver().delivered == 1
    assert Pause.objects.get().handed_off_at is not None
    assert not Pause.objects.awaiting_handoff().exists()
    assert redeliver().delivered == 0  # exactly once more: the stamp holds
    assert [r.claims.jti for r in HANDED] == [minted.claims.jti] * 2
    assert [r.answer for r in HANDED] == ["kept", "kept"]
