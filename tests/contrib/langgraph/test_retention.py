"""The core's erasure and purge reach the saver's rows; pruning shrinks a thread and keeps it resumable."""

from __future__ import annotations

import uuid
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from langgraph.types import Command

from tests.contrib.langgraph.graphs import config, transcript_graph
from tests.contrib.langgraph.test_saver import put_chain
from tests.pause_helpers import age, answered, mint
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver
from turnstate_app.contrib.langgraph.maintenance import stored_bytes
from turnstate_app.contrib.langgraph.models import ChannelBlob, Checkpoint, CheckpointWrite
from turnstate_app.contrib.langgraph.retention import purge_orphaned_checkpoints
from turnstate_app.models import Pause
from turnstate_app.retention import erase_thread

pytestmark = pytest.mark.django_db


def saver_rows(thread_id: str) -> int:
    return sum(
        model._default_manager.filter(thread_id=thread_id).count()
        for model in (Checkpoint, ChannelBlob, CheckpointWrite)
    )


def test_erase_thread_removes_the_savers_rows_of_that_thread_only() -> None:
    saver = DjangoCheckpointSaver()
    put_chain(saver, "thread-1", 3)
    put_chain(saver, "thread-2", 2)
    mint(1)

    erase_thread("thread-1")

    assert saver_rows("thread-1") == 0
    assert saver.get_tuple(config("thread-1")) is None
    assert saver_rows("thread-2") > 0


def test_turnstate_purge_thread_removes_the_savers_rows() -> None:
    put_chain(DjangoCheckpointSaver(), "thread-7", 2)
    call_command("turnstate_purge", "--thread", "thread-7", stdout=StringIO())
    assert saver_rows("thread-7") == 0


def test_a_dry_run_keeps_the_savers_rows() -> None:
    put_chain(DjangoCheckpointSaver(), "thread-8", 2)
    call_command("turnstate_purge", "--thread", "thread-8", "--dry-run", stdout=StringIO())
    assert saver_rows("thread-8") > 0


def test_age_purge_removes_checkpoints_of_threads_left_without_pauses() -> None:
    saver = DjangoCheckpointSaver()
    old = answered(1)
    age(old, 40)
    shared_old = answered(2)
    age(shared_old, 40)
    still_pending = mint(3, thread_id="thread-2")  # a live pause on the same thread as pause 2
    for thread in ("thread-1", "thread-2", "thread-9"):
        put_chain(saver, thread, 2)

    call_command("turnstate_purge", "--older-than", "30", stdout=StringIO())

    assert saver_rows("thread-1") == 0
    assert saver_rows("thread-2") > 0  # its pending pause must stay continuable
    assert Pause.objects.filter(jti=still_pending.claims.jti).exists()
    assert saver_rows("thread-9") > 0  # never paused: not the ledger's to purge


def test_a_purge_batch_of_threads_without_checkpoints_asks_only_the_savers_table() -> None:
    """Most purged threads were never the saver's: one question to its own table, none to the ledger."""
    threads = [f"thread-{n}" for n in range(50)]
    with CaptureQueriesContext(connection) as queries:
        purge_orphaned_checkpoints(sender=Pause, thread_ids=threads, using="default")
    assert len(queries.captured_queries) == 1, [q["sql"] for q in queries.captured_queries]
    assert Checkpoint._meta.db_table in queries.captured_queries[0]["sql"]
    assert Pause._meta.db_table not in queries.captured_queries[0]["sql"]


def test_deleting_a_user_removes_the_checkpoints_of_their_threads() -> None:
    person = get_user_model().objects.create_user("traveller")
    mint(4, owner=person)
    put_chain(DjangoCheckpointSaver(), "thread-4", 2)

    person.delete()

    assert saver_rows("thread-4") == 0


@pytest.mark.django_db(transaction=True)
def test_prune_shrinks_a_five_step_thread_with_a_100_kb_transcript_and_it_still_resumes() -> None:
    saver = DjangoCheckpointSaver()
    thread = f"transcript-{uuid.uuid4()}"
    graph = transcript_graph(saver)
    start = {"messages": [f"m{i}: " + "y" * 1000 for i in range(100)]}  # about 100 KB
    [pending] = graph.invoke(start, config(thread))["__interrupt__"]
    before = stored_bytes("default", thread)

    saver.prune([thread], strategy="keep_latest")

    after = stored_bytes("default", thread)
    print({"bytes_before_prune": before, "bytes_after_prune": after})
    assert before > 5 * 100_000
    assert after < 0.25 * before
    done = graph.invoke(Command(resume={pending.id: "yes"}), config(thread))
    assert done["messages"][-1] == "answer: yes"
    assert len(done["messages"]) == 100 + 5 + 1
