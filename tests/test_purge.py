"""Retention on the storage layer: what a purge deletes, what it keeps, and in what steps."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.factories import PauseFactory, UserFactory
from tests.pause_helpers import age, answered, expire, legacy_request, mint, rows_of
from turnstate_app.checkpoints import payload_key
from turnstate_app.models import CheckpointMetadata, Pause, PauseStatus
from turnstate_app.retention import MAX_BATCH_SIZE, PurgeBatch, erase_thread, purge_pauses

pytestmark = pytest.mark.django_db


def cutoff(days: int = 30) -> datetime:
    return timezone.now() - timedelta(days=days)


def test_old_settled_pauses_go_with_all_their_rows_and_everything_else_stays() -> None:
    old_answer = answered(1)
    age(old_answer, 40)
    old_expired = mint(2)
    expire(old_expired, 40)
    recent_answer = answered(3)
    age(recent_answer, 5)
    old_pending = mint(4)
    age(old_pending, 40)  # never marked expired: still pending to the ledger
    legacy_request(5)

    result = purge_pauses(Pause.objects.purgeable(cutoff()))

    assert (result.pauses, result.rows, result.dry_run) == (2, 5, False)  # request+turn+answer, request+turn
    assert rows_of(old_answer) == rows_of(old_expired) == set()
    assert set(Pause.objects.values_list("jti", flat=True)) == {
        recent_answer.claims.jti,
        old_pending.claims.jti,
    }
    assert len(rows_of(recent_answer)) == 3
    assert len(rows_of(old_pending)) == 2
    assert CheckpointMetadata.objects.filter(thread_id="legacy-5").exists()


def test_include_pending_also_takes_stale_pending_pauses_but_never_live_ones() -> None:
    stale = mint(1)
    age(stale, 40)
    live = mint(2)

    result = purge_pauses(Pause.objects.purgeable(cutoff(), include_pending=True))

    assert result.pauses == 1
    assert rows_of(stale) == set()
    assert list(Pause.objects.values_list("jti", flat=True)) == [live.claims.jti]


def test_a_dry_run_counts_exactly_what_the_real_run_deletes_and_deletes_nothing() -> None:
    for n in range(5):
        age(answered(n), 40)
    first = answered(9, thread_id="shared")  # a retried call: two pauses, one request row
    retry = answered(10, thread_id="shared", tool_call_id="call-9")
    age(first, 40)
    age(retry, 40)
    before = (Pause.objects.count(), CheckpointMetadata.objects.count())

    counted = purge_pauses(Pause.objects.purgeable(cutoff()), batch_size=2, dry_run=True)

    assert (Pause.objects.count(), CheckpointMetadata.objects.count()) == before
    deleted = purge_pauses(Pause.objects.purgeable(cutoff()), batch_size=2)
    assert (counted.pauses, counted.rows, counted.batches) == (deleted.pauses, deleted.rows, deleted.batches)
    assert counted.dry_run and not deleted.dry_run
    assert CheckpointMetadata.objects.count() == 0


def test_a_request_row_stays_while_a_kept_pause_shares_it() -> None:
    first = answered(1)
    age(first, 40)
    retry = mint(1)  # same thread, checkpoint and tool call: the same request row, still pending
    request_key = payload_key(retry.claims)

    purge_pauses(Pause.objects.purgeable(cutoff()))

    assert rows_of(first) == {request_key, f"turn_state:{retry.claims.jti}"}
    Pause.objects.filter(jti=retry.claims.jti).update(status=PauseStatus.EXPIRED, expires_at=cutoff(40))
    purge_pauses(Pause.objects.purgeable(cutoff()))
    assert rows_of(retry) == set()


def test_a_shared_request_row_goes_with_the_last_pause_even_across_batches() -> None:
    first = answered(1)
    retry = answered(2, thread_id="thread-1", tool_call_id="call-1")
    age(first, 40)
    age(retry, 40)

    result = purge_pauses(Pause.objects.purgeable(cutoff()), batch_size=1)

    assert (result.batches, result.pauses, result.rows) == (2, 2, 5)
    assert rows_of(first) == set()


def test_batches_are_bounded_one_delete_per_table_per_batch() -> None:
    for n in range(5):
        age(answered(n), 40)
    seen: list[PurgeBatch] = []

    with CaptureQueriesContext(connection) as queries:
        result = purge_pauses(Pause.objects.purgeable(cutoff()), batch_size=2, progress=seen.append)

    deletes = [q["sql"] for q in queries.captured_queries if q["sql"].lstrip().upper().startswith("DELETE")]
    assert result.batches == 3
    assert len(deletes) == 2 * 3
    assert [(b.number, b.pauses, b.rows) for b in seen] == [(1, 2, 6), (2, 2, 6), (3, 1, 3)]


@pytest.mark.parametrize("size", [0, -1, MAX_BATCH_SIZE + 1])
def test_a_batch_size_out_of_bounds_is_refused_before_anything_is_deleted(size: int) -> None:
    age(answered(1), 40)
    with pytest.raises(ValueError, match="batch_size"):
        purge_pauses(Pause.objects.purgeable(cutoff()), batch_size=size)
    assert Pause.objects.count() == 1


def test_erasing_a_thread_takes_everything_of_it_whatever_its_state() -> None:
    mint(1)
    answered(2, thread_id="thread-1", tool_call_id="call-2")
    legacy_request(1)
    CheckpointMetadata.objects.filter(thread_id="legacy-1").update(thread_id="thread-1")
    other = mint(3)

    counted = erase_thread("thread-1", dry_run=True)
    result = erase_thread("thread-1", batch_size=2)

    assert (counted.pauses, counted.rows) == (result.pauses, result.rows) == (2, 6)
    assert not CheckpointMetadata.objects.filter(thread_id="thread-1").exists()
    assert list(Pause.objects.values_list("jti", flat=True)) == [other.claims.jti]
    assert len(rows_of(other)) == 2


def test_deleting_a_user_deletes_their_pauses_and_those_pauses_rows() -> None:
    gone, stays = UserFactory.create(username="gone"), UserFactory.create(username="stays")
    theirs = [mint(1, owner=gone), answered(2, owner=gone)]
    shared = mint(3, owner=stays, thread_id="thread-1", tool_call_id="call-1")  # shares pause 1's request
    kept = mint(4, owner=stays)

    gone.delete()

    assert set(Pause.objects.values_list("jti", flat=True)) == {shared.claims.jti, kept.claims.jti}
    assert rows_of(theirs[0]) == {"ask_user_request:call-1", f"turn_state:{shared.claims.jti}"}
    assert rows_of(theirs[1]) == set()
    assert len(rows_of(kept)) == 2


def test_deleting_users_in_bulk_erases_them_all() -> None:
    for n in range(3):
        mint(n, owner=UserFactory.create(username=f"u{n}"))

    get_user_model().objects.all().delete()

    assert not Pause.objects.exists()
    assert not CheckpointMetadata.objects.exists()


def test_the_deprecated_queryset_purge_still_purges_and_says_what_to_call() -> None:
    kept = PauseFactory.create(status=PauseStatus.PENDING)
    gone = PauseFactory.create(status=PauseStatus.EXPIRED, expires_at=cutoff() - timedelta(days=1))
    with pytest.warns(DeprecationWarning, match="purge_pauses"):
        result = Pause.objects.purgeable(cutoff()).purge(batch_size=10)
    assert result.pauses == 1
    assert set(Pause.objects.values_list("pk", flat=True)) == {kept.pk}
    assert not Pause.objects.filter(pk=gone.pk).exists()
