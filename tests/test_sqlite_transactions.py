"""What a mint and a resume have SQLite execute, read from sqlite3's own trace callback.

Outside a transaction of the caller's, each runs in one ``atomic()`` block (``BEGIN`` in the
connection's ``transaction_mode``) and commits once; a mint has one savepoint, around its
turn state (the one write whose failure it survives), a resume none; a refused write rolls
the whole attempt back. Inside the caller's transaction, nothing is committed on its behalf.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction

from tests.pause_helpers import mint, mint_reusing_jti
from turnstate_app.errors import PauseAlreadyAnsweredError
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pauses import resume_pause

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "sqlite", reason="sqlite3's trace callback: SQLite only"),
]


def traced(call: Callable[[], Any]) -> tuple[Any, list[str]]:
    """Run ``call`` on Django's connection; return its result and every statement SQLite ran."""
    statements: list[str] = []
    connection.ensure_connection()
    driver = connection.connection
    driver.set_trace_callback(statements.append)
    try:
        return call(), statements
    finally:
        driver.set_trace_callback(None)


@contextmanager
def counting_atomic_blocks() -> Iterator[list[bool]]:
    """Each ``atomic()`` block entered on the connection, as it was entered (outermost: False)."""
    entered: list[bool] = []
    real = transaction.Atomic.__enter__

    def enter(self: transaction.Atomic) -> None:
        entered.append(connection.in_atomic_block)
        real(self)

    transaction.Atomic.__enter__ = enter  # type: ignore[method-assign]
    try:
        yield entered
    finally:
        transaction.Atomic.__enter__ = real  # type: ignore[method-assign]


def verbs(statements: list[str]) -> list[str]:
    return [s.split(None, 1)[0].upper() for s in statements]


@contextmanager
def refusing_answers() -> Iterator[None]:
    """A trigger that refuses every answer row, as a constraint of the database would."""
    table = connection.ops.quote_name(CheckpointMetadata._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TRIGGER refuse_answers BEFORE INSERT ON {table} "
            "WHEN NEW.key LIKE 'answer:%' BEGIN SELECT RAISE(ABORT, 'answers refused'); END"
        )
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TRIGGER refuse_answers")


def test_a_mint_is_one_transaction_with_a_savepoint_only_around_its_turn_state() -> None:
    with counting_atomic_blocks() as entered:
        minted, statements = traced(lambda: mint(1))
    assert entered == [False, True], "the mint's transaction, and the turn state's savepoint in it"
    assert verbs(statements) == ["BEGIN", "INSERT", "SAVEPOINT", "INSERT", "RELEASE", "INSERT", "COMMIT"], (
        statements
    )
    assert minted.resumable
    assert Pause.objects.filter(jti=minted.claims.jti).exists()
    assert CheckpointMetadata.objects.filter(thread_id=minted.claims.thread_id).count() == 2


def test_a_resume_reads_once_then_consumes_and_answers_in_one_transaction() -> None:
    minted = mint(1)
    with counting_atomic_blocks() as entered:
        resumed, statements = traced(lambda: resume_pause(minted.token, "yes"))
    assert entered == [False], "one transaction, no savepoint"
    assert resumed.answer == "yes"
    assert verbs(statements) == ["SELECT", "BEGIN", "UPDATE", "INSERT", "COMMIT"], statements
    assert Pause.objects.get(jti=minted.claims.jti).status == "answered"


def test_the_connections_transaction_mode_opens_the_transaction() -> None:
    connection.ensure_connection()
    saved = connection.transaction_mode  # type: ignore[attr-defined]
    connection.transaction_mode = "IMMEDIATE"  # type: ignore[attr-defined]
    try:
        minted, statements = traced(lambda: mint(1))
    finally:
        connection.transaction_mode = saved  # type: ignore[attr-defined]
    assert statements[0] == "BEGIN IMMEDIATE", statements
    assert Pause.objects.filter(jti=minted.claims.jti).exists()


def test_a_refused_mint_write_rolls_the_whole_mint_back() -> None:
    """The ledger INSERT refused (a duplicate jti): the database's error is raised, nothing of
    the mint lands, and the connection is usable."""
    first = mint(1)
    with pytest.raises(IntegrityError):
        traced(lambda: mint_reusing_jti(first, 1, tool_call_id="call-2"))
    assert Pause.objects.count() == 1
    assert not CheckpointMetadata.objects.filter(key__contains="call-2").exists()
    assert not connection.connection.in_transaction
    assert mint(1, tool_call_id="call-3").resumable


def test_a_refused_answer_leaves_the_pause_pending_and_answerable() -> None:
    """The answer's write refused after the UPDATE won: the UPDATE is rolled back with it,
    the error is the database's, and the same token answers once the refusal is lifted."""
    minted = mint(1)
    with refusing_answers():
        with pytest.raises(IntegrityError, match="answers refused"):
            traced(lambda: resume_pause(minted.token, "yes"))
        assert not connection.connection.in_transaction
    assert Pause.objects.get(jti=minted.claims.jti).status == "pending"
    assert resume_pause(minted.token, "yes").answer == "yes"
    with pytest.raises(PauseAlreadyAnsweredError):
        resume_pause(minted.token, "again")


def test_inside_the_callers_transaction_nothing_is_committed_on_its_behalf() -> None:
    class UndoError(Exception):
        pass

    with pytest.raises(UndoError), transaction.atomic():
        minted, minting = traced(lambda: mint(1))
        _, resuming = traced(lambda: resume_pause(minted.token, "yes"))
        assert "COMMIT" not in verbs(minting + resuming)
        assert "BEGIN" not in verbs(minting + resuming)
        raise UndoError
    assert not Pause.objects.exists()
    assert not CheckpointMetadata.objects.exists()
