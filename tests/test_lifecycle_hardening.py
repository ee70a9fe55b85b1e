"""No pause lost, stranded or misreported: each test here failed before its fix.

The numbers are those of the defects the lifecycle was hardened against.
"""

from __future__ import annotations

import logging
import multiprocessing
import random
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pytest
from django.db import DatabaseError, connection, connections
from django.db.models import QuerySet
from django.db.models.signals import pre_save
from django.utils import timezone
from rest_framework.test import APIClient

from tests.pause_helpers import lost, mint
from tests.processes import answer_and_report
from turnstate_app.errors import (
    CheckpointFieldError,
    PauseAlreadyAnsweredError,
    PauseCheckpointNotFoundError,
    PauseExpiredError,
)
from turnstate_app.models import CheckpointMetadata, Pause, UnresumablePause
from turnstate_app.pauses import pause_minted, resume_pause
from turnstate_app.pauses.tokens import MAX_TOKEN_CHARS
from turnstate_app.ports.limits import INDEX_ID_BYTE_LIMITS
from turnstate_app.retention import erase_thread

pytestmark = pytest.mark.django_db(transaction=True)
SPAWN = multiprocessing.get_context("spawn")


def four_byte_text(length: int, seed: int) -> str:
    """``length`` varied four-byte characters (planes 1-16): as long in UTF-8 as text gets, and
    as incompressible, so the token is as long as such ids make it."""
    chooser = random.Random(seed)
    return "".join(chr(chooser.randrange(0x10000, 0x110000)) for _ in range(length))


def rows() -> list[tuple[str, str]]:
    return sorted(CheckpointMetadata.objects.values_list("thread_id", "key"))


# -- 2. every token a mint issues for documented ids is accepted ---------------------------


def widest_ids() -> dict[str, Any]:
    """255 four-byte characters in every id field, as far as the store's key columns allow.

    The request key is ``ask_user_request:<tool_call_id>`` in a 255-character column, so a
    tool call id has 255 - 17 characters.
    """
    fields = ("run_id", "session_id", "scope_hash", "name", "interrupt_id")
    ids = {field: four_byte_text(255, seed) for seed, field in enumerate(fields)}
    widest = four_byte_text(255, 10)
    call = four_byte_text(255 - len("ask_user_request:"), 11)
    limit = INDEX_ID_BYTE_LIMITS.get(connection.vendor)
    if limit is None:  # SQLite, MariaDB/MySQL: no total beyond 255 characters each
        return {**ids, "thread_id": widest, "checkpoint_id": four_byte_text(255, 12), "tool_call_id": call}
    # PostgreSQL: thread, checkpoint and request key together within the unique index's bytes.
    room = (limit - len("ask_user_request:")) // 4
    share = min(255, room // 3)
    return {
        **ids,
        "thread_id": four_byte_text(share, 10),
        "checkpoint_id": four_byte_text(share, 12),
        "tool_call_id": four_byte_text(room - 2 * share, 11),
    }


def test_2_a_pause_minted_for_the_widest_documented_ids_can_be_answered() -> None:
    minted = mint(1, **widest_ids())
    assert len(minted.token) > 4096  # the old limit, which refused these tokens
    assert len(minted.token) <= MAX_TOKEN_CHARS
    resumed = resume_pause(minted.token, "yes")
    assert resumed.claims == minted.claims
    assert resumed.checkpoint is not None
    assert Pause.objects.get().status == "answered"


# -- 3. a raising pause_minted receiver loses nothing --------------------------------------


def test_3_a_failing_pause_minted_receiver_still_returns_the_token(caplog: pytest.LogCaptureFixture) -> None:
    def broken_receiver(**kwargs: Any) -> None:
        raise RuntimeError("notification service down")

    pause_minted.connect(broken_receiver)
    try:
        with caplog.at_level(logging.ERROR, logger="turnstate_app.pauses.mint"):
            minted = mint(3)
    finally:
        pause_minted.disconnect(broken_receiver)
    assert "pause_minted receiver" in caplog.text
    assert resume_pause(minted.token, "ok").claims.jti == minted.claims.jti


# -- 6. a mint interrupted at the ledger insert leaves nothing behind ----------------------


def test_6_a_mint_failing_at_the_ledger_insert_leaves_no_rows_and_a_retry_mints_once() -> None:
    def refuse_ledger_insert(**kwargs: Any) -> None:
        raise DatabaseError("the database went away at the ledger insert")

    pre_save.connect(refuse_ledger_insert, sender=Pause)
    try:
        with pytest.raises(DatabaseError):
            mint(6)
    finally:
        pre_save.disconnect(refuse_ledger_insert, sender=Pause)
    assert rows() == [] and not Pause.objects.exists()

    minted = mint(6)  # the retry
    assert Pause.objects.count() == 1
    assert {key for _, key in rows()} == {"ask_user_request:call-6", f"turn_state:{minted.claims.jti}"}
    assert not UnresumablePause.objects.exists()


# -- 8. an expired pause is not listed as an unresumable pending one -----------------------


def test_8_an_expired_pause_is_not_listed_as_unresumable() -> None:
    minted = lost(8)
    assert [row.jti for row in UnresumablePause.objects.all()] == [minted.claims.jti]
    Pause.objects.filter(jti=minted.claims.jti).update(expires_at=timezone.now())
    assert list(UnresumablePause.objects.all()) == []


# -- 9. a resume racing an erasure is the documented 404 ------------------------------------


def test_9_a_resume_racing_an_erasure_is_not_found(monkeypatch: pytest.MonkeyPatch) -> None:
    from turnstate_app.pauses import resume as resume_module

    minted = mint(9)
    checked = resume_module.stored_turn

    def erased_meanwhile(store: Any, claims: Any) -> Any:
        found = checked(store, claims)
        erase_thread(claims.thread_id)  # after every check, before the conditional UPDATE
        return found

    monkeypatch.setattr(resume_module, "stored_turn", erased_meanwhile)
    with pytest.raises(PauseCheckpointNotFoundError):
        resume_pause(minted.token, "late")


def test_9_over_rest_the_race_is_a_json_404(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.contrib.auth import get_user_model

    from turnstate_app.pauses import resume as resume_module

    minted = mint(90)
    checked = resume_module.stored_turn

    def erased_meanwhile(store: Any, claims: Any) -> Any:
        found = checked(store, claims)
        erase_thread(claims.thread_id)
        return found

    monkeypatch.setattr(resume_module, "stored_turn", erased_meanwhile)
    client = APIClient()
    client.force_login(get_user_model().objects.create_user("racer"))
    response = client.post(
        "/api/turnstate/pauses/resume/", {"token": minted.token, "answer": "late"}, format="json"
    )
    assert response.status_code == 404, response.content
    assert response.json()["code"] == "not_found"


# -- 10. a lone surrogate is a field error, and the pause stays pending --------------------


def test_10_a_lone_surrogate_answer_is_refused_before_anything_is_consumed() -> None:
    minted = mint(10)
    with pytest.raises(CheckpointFieldError, match="surrogate"):
        resume_pause(minted.token, "\ud800")
    assert Pause.objects.get().status == "pending"
    assert resume_pause(minted.token, "fine").answer == "fine"


def test_10_over_rest_a_lone_surrogate_is_a_400_on_answer() -> None:
    from django.contrib.auth import get_user_model

    minted = mint(100)
    client = APIClient()
    client.force_login(get_user_model().objects.create_user("surrogate"))
    body = '{"token": "' + minted.token + '", "answer": "\\ud800"}'
    response = client.post("/api/turnstate/pauses/resume/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert "answer" in response.json()
    assert Pause.objects.get().status == "pending"


# -- 13. answered wins over age, also when the expiry mark waited on the winner's lock -----


def test_13_an_answer_committed_while_the_expiry_mark_waited_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    minted = mint(13)
    jti = minted.claims.jti
    Pause.objects.filter(jti=jti).update(expires_at=timezone.now())
    original_update = QuerySet.update

    def winner_commits_first(self: QuerySet[Any], **kwargs: Any) -> int:
        if self.model is Pause and kwargs.get("status") == "expired":
            # The winner's answer commits while this UPDATE waits on its row lock.
            original_update(Pause.objects.filter(jti=jti), status="answered", answered_at=timezone.now())
        return original_update(self, **kwargs)

    monkeypatch.setattr(QuerySet, "update", winner_commits_first)
    with pytest.raises(PauseAlreadyAnsweredError):
        resume_pause(minted.token, "late")
    assert Pause.objects.get().status == "answered"


# -- 14. losers get 409, never 503, at every isolation level --------------------------------


def isolation_levels() -> list[Any]:
    vendor = connections["default"].vendor
    if vendor == "postgresql":
        try:
            import psycopg
        except ImportError:  # psycopg2 as the driver
            from psycopg2 import extensions

            return [
                extensions.ISOLATION_LEVEL_READ_COMMITTED,
                extensions.ISOLATION_LEVEL_REPEATABLE_READ,
                extensions.ISOLATION_LEVEL_SERIALIZABLE,
            ]
        return [
            psycopg.IsolationLevel.READ_COMMITTED,
            psycopg.IsolationLevel.REPEATABLE_READ,
            psycopg.IsolationLevel.SERIALIZABLE,
        ]
    if vendor == "mysql":
        return ["read committed", "repeatable read"]
    return []


LOCK_WAITERS = {
    "postgresql": (
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE wait_event_type = 'Lock' AND datname = current_database()"
    ),
    "mysql": (
        "SELECT count(*) FROM information_schema.processlist WHERE command = 'Query' AND info LIKE 'UPDATE%'"
    ),
}


def wait_until_a_statement_waits_on_a_lock(observer: Any, loser: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not loser.done():
        with observer.cursor() as cursor:
            cursor.execute(LOCK_WAITERS[observer.vendor])
            if cursor.fetchone()[0]:
                return
        time.sleep(0.05)
    raise AssertionError(f"the loser never waited on the winner's lock: {loser.result()!r}")


@pytest.mark.parametrize("level", isolation_levels() or [None], ids=str)
def test_14_a_loser_waiting_on_the_winners_lock_gets_409(level: Any) -> None:
    if level is None:
        pytest.skip("SQLite has one isolation level and serialises writers")
    minted = mint(14)
    settings_dict = dict(connection.settings_dict)
    settings_dict["OPTIONS"] = {**settings_dict.get("OPTIONS", {}), "isolation_level": level}
    winner = connections.create_connection("default")
    try:
        winner.set_autocommit(False)
        with winner.cursor() as cursor:  # the winner's conditional UPDATE, not yet committed
            cursor.execute(
                f"UPDATE {Pause._meta.db_table} SET status = %s, answered_at = %s WHERE jti = %s",
                ["answered", timezone.now(), minted.claims.jti],
            )
        with ProcessPoolExecutor(1, mp_context=SPAWN) as pool:
            loser = pool.submit(answer_and_report, settings_dict, minted.token, "second")
            wait_until_a_statement_waits_on_a_lock(connection, loser)  # the loser read "pending" and queued
            winner.commit()
            outcome = loser.result(timeout=60)
    finally:
        winner.close()
    assert outcome == "already_answered"


# -- 15. under ATOMIC_REQUESTS the expiry mark of a refused answer is kept ----------------


def test_15_under_atomic_requests_an_expired_answer_keeps_the_expiry_mark(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from django.contrib.auth import get_user_model

    minted = mint(15)
    Pause.objects.filter(jti=minted.claims.jti).update(expires_at=timezone.now())
    monkeypatch.setitem(connections["default"].settings_dict, "ATOMIC_REQUESTS", True)
    client = APIClient()
    client.force_login(get_user_model().objects.create_user("late"))
    response = client.post(
        "/api/turnstate/pauses/resume/", {"token": minted.token, "answer": "x"}, format="json"
    )
    assert response.status_code == 410, response.content
    assert Pause.objects.get().status == "expired"
    with pytest.raises(PauseExpiredError):
        resume_pause(minted.token, "x")


# -- 16. resume decides on the primary, never on a lagging replica --------------------------


class ReplicaRouter:
    """Reads from "replica" (a second, empty database), writes to "default"."""

    def db_for_read(self, model: Any, **hints: Any) -> str:
        return "replica"

    def db_for_write(self, model: Any, **hints: Any) -> str:
        return "default"

    def allow_relation(self, *args: Any, **hints: Any) -> bool:
        return True


@pytest.mark.django_db(transaction=True, databases=["default", "replica"])
def test_16_a_resume_behind_an_empty_replica_still_finds_the_turn(settings: Any) -> None:
    minted = mint(16)
    settings.DATABASE_ROUTERS = ["tests.test_lifecycle_hardening.ReplicaRouter"]
    assert not Pause.objects.exists()  # reads go to the replica, which is empty
    resumed = resume_pause(minted.token, "from the primary")
    assert resumed.checkpoint is not None
    assert Pause.objects.using("default").get().status == "answered"


def test_8_the_admin_lists_and_filters_by_the_effective_status(staff_client: Any) -> None:
    overdue = mint(80)
    current = mint(81)
    Pause.objects.filter(jti=overdue.claims.jti).update(expires_at=timezone.now())
    client = staff_client("view_pause")
    url = "/admin/turnstate_app/pause/"

    def listed(status: str) -> set[str]:
        page = client.get(url, {"status__exact": status}).content.decode()
        return {jti for jti in (overdue.claims.jti, current.claims.jti) if jti in page}

    assert listed("expired") == {overdue.claims.jti}
    assert listed("pending") == {current.claims.jti}
    detail = client.get(f"{url}{Pause.objects.get(jti=overdue.claims.jti).pk}/change/").content.decode()
    assert "expired" in detail
