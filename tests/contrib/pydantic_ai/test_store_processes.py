"""Two real processes saving one conversation at once: one save lands, the other is a conflict."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pytest
from django.db import connection

from tests.contrib.pydantic_ai.conversations import conversation, sync, texts
from tests.contrib.pydantic_ai.processes import delete_or_fork, save_in_rounds
from turnstate_app.contrib.pydantic_ai import DjangoConversationStore
from turnstate_app.contrib.pydantic_ai.models import StoredConversation, StoredEntry

pytestmark = pytest.mark.django_db(transaction=True)
SPAWN = multiprocessing.get_context("spawn")
ROUNDS = 4


@pytest.fixture(scope="module")
def racers() -> Iterator[tuple[ProcessPoolExecutor, Any]]:
    with SPAWN.Manager() as manager, ProcessPoolExecutor(2, mp_context=SPAWN) as pool:
        yield pool, manager


def race(racers: tuple[ProcessPoolExecutor, Any], conversation_ids: list[str]) -> list[list[str]]:
    """Per round, the two outcomes (sorted)."""
    pool, manager = racers
    barrier = manager.Barrier(2)
    futures = [
        pool.submit(save_in_rounds, dict(connection.settings_dict), conversation_ids, name, barrier)
        for name in ("left", "right")
    ]
    left, right = (future.result(timeout=120) for future in futures)
    return [sorted(pair) for pair in zip(left, right, strict=True)]


def test_two_processes_saving_the_same_revision_one_lands_one_conflicts(racers: Any) -> None:
    store = DjangoConversationStore()
    sync(store.save, conversation("raced", "start"))
    assert race(racers, ["raced"] * ROUNDS) == [["conflict", "saved"]] * ROUNDS
    loaded = sync(store.load, "raced")
    assert loaded is not None
    said = texts(loaded.messages)
    assert len(said) == 2 + 2 * ROUNDS  # one turn per round; the loser's entries never stored
    assert StoredEntry.objects.filter(conversation_id="raced").count() == len(said)


def test_two_processes_creating_the_same_conversation_one_lands_one_conflicts(racers: Any) -> None:
    ids = [f"created-{n}" for n in range(ROUNDS)]
    assert race(racers, ids) == [["conflict", "saved"]] * ROUNDS
    assert StoredConversation.objects.filter(conversation_id__in=ids).count() == ROUNDS
    assert StoredEntry.objects.filter(conversation_id__in=ids).count() == 2 * ROUNDS


def test_a_fork_racing_a_delete_never_points_at_deleted_messages(racers: Any) -> None:
    pool, manager = racers
    store = DjangoConversationStore()
    ids = [f"doomed-{n}" for n in range(ROUNDS * 2)]
    for conversation_id in ids:
        sync(store.save, conversation(conversation_id, "one", "two"))
    barrier = manager.Barrier(2)
    settings = dict(connection.settings_dict)
    deleter = pool.submit(delete_or_fork, settings, ids, "delete", barrier)
    forker = pool.submit(delete_or_fork, settings, ids, "fork", barrier)
    deleted, forked = deleter.result(timeout=120), forker.result(timeout=120)

    assert deleted == ["deleted"] * len(ids)
    print({"fork_outcomes": forked})
    assert set(forked) <= {"forked", "refused"}, forked
    for conversation_id, outcome in zip(ids, forked, strict=True):
        fork = sync(store.load, f"{conversation_id}-fork")  # a LookupError here: a fork into deleted entries
        if outcome == "forked":
            assert fork is not None and texts(fork.messages) == ["q-one", "a-one", "q-two", "a-two"]
        else:
            assert fork is None and rows_of(conversation_id) == 0


def rows_of(conversation_id: str) -> int:
    return (
        StoredConversation.objects.filter(conversation_id=conversation_id).count()
        + StoredEntry.objects.filter(conversation_id=conversation_id).count()
    )
