"""The core's erasure and purge reach the conversations; a delete keeps what a fork still uses."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.contrib.pydantic_ai.conversations import conversation, sync, texts, turn
from tests.pause_helpers import age, answered, mint
from turnstate_app.contrib.pydantic_ai import DjangoConversationStore
from turnstate_app.contrib.pydantic_ai.models import StoredConversation, StoredEntry
from turnstate_app.contrib.pydantic_ai.retention import purge_orphaned_conversations
from turnstate_app.models import Pause
from turnstate_app.retention import erase_thread

pytestmark = pytest.mark.django_db


def rows(*conversation_ids: str) -> int:
    """Records and entries stored by these conversations."""
    ids = list(conversation_ids)
    return (
        StoredConversation.objects.filter(conversation_id__in=ids).count()
        + StoredEntry.objects.filter(conversation_id__in=ids).count()
    )


def family(store: DjangoConversationStore, root: str) -> None:
    """``root``, a fork of it that adds a turn, and a fork of that fork that adds another."""
    sync(store.save, conversation(root, "one", "two"))
    child = sync(store.fork, root, new_conversation_id=f"{root}-fork")
    child.messages += turn("child")
    sync(store.save, child)
    grandchild = sync(store.fork, f"{root}-fork", new_conversation_id=f"{root}-fork-fork")
    grandchild.messages += turn("grandchild")
    sync(store.save, grandchild)


def test_erase_thread_deletes_the_conversation_and_every_fork_of_it() -> None:
    store = DjangoConversationStore()
    family(store, "thread-1")
    sync(store.save, conversation("thread-2", "other"))
    mint(1)

    erase_thread("thread-1")

    assert rows("thread-1", "thread-1-fork", "thread-1-fork-fork") == 0
    assert sync(store.load, "thread-1-fork-fork") is None
    other = sync(store.load, "thread-2")
    assert other is not None and texts(other.messages) == ["q-other", "a-other"]


def test_erasing_a_fork_leaves_the_conversation_it_came_from() -> None:
    store = DjangoConversationStore()
    family(store, "thread-3")

    erase_thread("thread-3-fork")

    assert rows("thread-3-fork", "thread-3-fork-fork") == 0
    source = sync(store.load, "thread-3")
    assert source is not None and texts(source.messages) == ["q-one", "a-one", "q-two", "a-two"]


def test_erase_finds_a_fork_of_a_fork_whose_middle_was_deleted() -> None:
    store = DjangoConversationStore()
    family(store, "thread-5")
    sync(store.delete, "thread-5-fork")  # its entries stay: the fork of it continues from them
    assert StoredEntry.objects.filter(conversation_id="thread-5-fork").count() == 2

    erase_thread("thread-5")

    assert rows("thread-5", "thread-5-fork", "thread-5-fork-fork") == 0


def test_turnstate_purge_thread_erases_the_conversation() -> None:
    store = DjangoConversationStore()
    family(store, "thread-7")
    call_command("turnstate_purge", "--thread", "thread-7", stdout=StringIO())
    assert rows("thread-7", "thread-7-fork", "thread-7-fork-fork") == 0


def test_age_purge_erases_conversations_left_without_pauses() -> None:
    store = DjangoConversationStore()
    age(answered(1), 40)
    age(answered(2), 40)
    mint(3, thread_id="thread-2")  # a live pause on the same conversation as pause 2
    age(answered(4), 40)
    for thread in ("thread-1", "thread-2", "thread-4", "thread-9"):
        sync(store.save, conversation(thread, "hello"))
    forked = sync(store.fork, "thread-4", new_conversation_id="thread-4-fork")
    mint(5, thread_id=forked.conversation_id)  # the fork waits on a pause of its own

    call_command("turnstate_purge", "--older-than", "30", stdout=StringIO())

    assert rows("thread-1") == 0
    assert rows("thread-2") == 3  # its pending pause must stay continuable
    assert rows("thread-4") == 3  # its fork's pause needs the entries they share
    assert sync(store.load, "thread-4-fork") is not None
    assert rows("thread-9") == 3  # never paused: not the ledger's to purge


def test_deleting_a_user_erases_the_conversations_of_their_pauses() -> None:
    person = get_user_model().objects.create_user("traveller")
    mint(6, owner=person)
    sync(DjangoConversationStore().save, conversation("thread-6", "hello"))

    person.delete()

    assert rows("thread-6") == 0


def test_delete_removes_the_entries_unless_a_fork_still_reaches_them() -> None:
    store = DjangoConversationStore()
    sync(store.save, conversation("alone", "one"))
    sync(store.delete, "alone")
    assert rows("alone") == 0

    sync(store.save, conversation("shared", "one", "two"))
    sync(
        store.fork, "shared", at=2, new_conversation_id="shared-fork"
    )  # points into the entries, stores none
    sync(store.delete, "shared")
    assert StoredEntry.objects.filter(conversation_id="shared").count() == 4
    fork = sync(store.load, "shared-fork")
    assert fork is not None and texts(fork.messages) == ["q-one", "a-one"]


def test_a_purge_batch_of_threads_without_conversations_asks_only_the_stores_table() -> None:
    """Most purged threads were never the store's: one question to its own table, none to the ledger."""
    threads = [f"thread-{n}" for n in range(50)]
    with CaptureQueriesContext(connection) as queries:
        purge_orphaned_conversations(sender=Pause, thread_ids=threads, using="default")
    assert len(queries.captured_queries) == 1, [q["sql"] for q in queries.captured_queries]
    assert StoredConversation._meta.db_table in queries.captured_queries[0]["sql"]
    assert Pause._meta.db_table not in queries.captured_queries[0]["sql"]
