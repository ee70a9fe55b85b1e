"""What a mint and a resume exchange with PostgreSQL, read from libpq's own protocol trace.

Outside a transaction of the caller's, a mint sends BEGIN, its three writes and COMMIT in
one round trip, and a resume reads once and consumes-and-answers in one statement. Inside
the caller's transaction, nothing is committed on its behalf.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from importlib.util import find_spec
from typing import Any

import pytest
from django.db import connection, transaction

from tests.pause_helpers import mint, mint_reusing_jti
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pauses import resume_pause

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="libpq's protocol trace: PostgreSQL only"),
    pytest.mark.skipif(
        find_spec("psycopg") is None, reason="libpq's protocol trace, as psycopg 3 exposes it"
    ),
]


def traced(call: Callable[[], Any]) -> tuple[Any, list[tuple[str, str, str]]]:
    """Run ``call`` on Django's connection under libpq's trace: (direction, message, detail) each."""
    from psycopg import pq

    connection.ensure_connection()
    pgconn = connection.connection.pgconn
    with tempfile.TemporaryFile("w+") as trace:
        pgconn.trace(trace.fileno())
        pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        try:
            result = call()
        finally:
            pgconn.untrace()
        trace.seek(0)
        fields = [line.rstrip("\n").split("\t") for line in trace]
    return result, [(f[0], f[2].strip(), "\t".join(f[3:])) for f in fields if len(f) > 2]


def round_trips(messages: list[tuple[str, str, str]]) -> int:
    return sum(1 for direction, message, _ in messages if (direction, message) == ("B", "ReadyForQuery"))


def sent(messages: list[tuple[str, str, str]], text: str) -> bool:
    return any(direction == "F" and text in detail for direction, _, detail in messages)


def test_a_mint_is_one_transaction_and_lands_whole() -> None:
    mint(1, tool_call_id="warm-up")
    minted, messages = traced(lambda: mint(1))
    # BEGIN, the request, SAVEPOINT, the turn state, RELEASE, the ledger row, COMMIT
    assert round_trips(messages) == 7, messages
    assert sum(1 for d, _, detail in messages if d == "F" and '"COMMIT"' in detail) == 1
    assert minted.resumable
    assert Pause.objects.filter(jti=minted.claims.jti).exists()
    assert CheckpointMetadata.objects.filter(thread_id=minted.claims.thread_id).count() == 2 * 2


def test_a_resume_is_two_round_trips_and_writes_its_answer_once() -> None:
    minted, other = mint(1), mint(1, tool_call_id="call-2")
    resume_pause(other.token, "warm-up")
    resumed, messages = traced(lambda: resume_pause(minted.token, "yes"))
    assert resumed.answer == "yes"
    assert round_trips(messages) == 2, messages
    assert not sent(messages, '"BEGIN"')
    assert Pause.objects.get(jti=minted.claims.jti).status == "answered"


def test_the_connections_isolation_level_starts_the_mints_transaction() -> None:
    import psycopg

    connection.ensure_connection()
    driver = connection.connection
    driver.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    try:
        minted, messages = traced(lambda: mint(1))
    finally:
        driver.isolation_level = None
    assert sent(messages, "BEGIN ISOLATION LEVEL REPEATABLE READ"), messages
    assert Pause.objects.filter(jti=minted.claims.jti).exists()


def test_inside_the_callers_transaction_nothing_is_committed_on_its_behalf() -> None:
    class UndoError(Exception):
        pass

    with pytest.raises(UndoError), transaction.atomic():
        minted = mint(1)
        _, messages = traced(lambda: resume_pause(minted.token, "yes"))
        assert not sent(messages, '"COMMIT"')
        raise UndoError
    assert not Pause.objects.exists()
    assert not CheckpointMetadata.objects.exists()


def test_a_refused_write_rolls_the_whole_mint_back() -> None:
    """The ledger INSERT refused (a duplicate jti): the database's error is raised, nothing of
    the mint lands, and the connection is usable."""
    from django.db import IntegrityError

    first = mint(1)
    with pytest.raises(IntegrityError):
        mint_reusing_jti(first, 1, tool_call_id="call-2")
    assert Pause.objects.count() == 1
    assert not CheckpointMetadata.objects.filter(key__contains="call-2").exists()
    assert mint(1, tool_call_id="call-3").resumable
