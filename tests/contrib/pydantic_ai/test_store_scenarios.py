"""One scenario suite, run against PydanticAI's own in-memory store and ours: the same results.

Each step asserts what the ``ConversationStore`` docstrings promise; the trace it returns
(texts, counts, which ids are equal, which calls conflict) is compared across the stores.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from pydantic_ai.conversation_store import (
    ConversationConflict,
    ConversationEntry,
    ConversationStore,
    InMemoryConversationStore,
)
from pydantic_ai.exceptions import UserError
from pydantic_ai.usage import RunUsage

from tests.contrib.pydantic_ai.conversations import conversation, sync, texts, turn
from turnstate_app.contrib.pydantic_ai import DjangoConversationStore

pytestmark = pytest.mark.django_db

STORES: dict[str, Callable[[], ConversationStore]] = {
    "in-memory": InMemoryConversationStore,
    "django": DjangoConversationStore,
}


@pytest.fixture(params=sorted(STORES))
def store(request: pytest.FixtureRequest) -> ConversationStore:
    return STORES[request.param]()


def conflicts(function: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:
    try:
        sync(function, *args, **kwargs)
    except ConversationConflict:
        return True
    return False


def save_reload(store: ConversationStore) -> list[Any]:
    conv = conversation("c-1", "one", "two")
    conv.usage = RunUsage(requests=2, input_tokens=11, output_tokens=7, tool_calls=1)
    saved = sync(store.save, conv, scope="alice")
    assert len(saved) == 4 and conv.revision is not None
    loaded = sync(store.load, "c-1")
    assert loaded is not None
    assert loaded.messages == conv.messages  # every field, timestamps included
    assert loaded.usage == conv.usage and loaded.revision == conv.revision
    loaded.messages += turn("three")
    more = sync(store.save, loaded)
    assert [e.parent_id for e in more] == [saved[-1].id, more[0].id]
    record = sync(store.read_record, "c-1")
    assert record is not None and record.head_id == more[-1].id and record.scope == "alice"
    window = sync(store.load, "c-1", limit=3)
    assert window is not None
    return [texts(loaded.messages), texts(window.messages), len(more), record.format_version]


def conflict(store: ConversationStore) -> list[Any]:
    first = sync(store.load, "c-1")
    second = sync(store.load, "c-1")
    assert first is not None and second is not None
    first.messages += turn("four")
    sync(store.save, first)
    second.messages += turn("elsewhere")
    stale = conflicts(store.save, second)
    fresh_copy = conversation("c-1", "one")  # never loaded: revision None, but the record exists
    exists = conflicts(store.save, fresh_copy)
    record = sync(store.read_record, "c-1")
    assert record is not None
    unknown_head = conflicts(
        store.write_record,
        dataclasses.replace(record, head_id="no-such-entry", revision="r-next"),
        expected_revision=record.revision,
    )
    stale_delete = conflicts(store.delete_record, "c-1", expected_revision="not-the-revision")
    other_scope = conflicts(store.save, sync(store.load, "c-1"), scope="bob")
    after = sync(store.load, "c-1")
    assert after is not None
    return [stale, exists, unknown_head, stale_delete, other_scope, texts(after.messages)]


def branch_and_back(store: ConversationStore) -> list[Any]:
    loaded = sync(store.load, "c-1")
    assert loaded is not None
    entries = sync(store.load_entries, "c-1")
    assert entries is not None
    old_tip = entries[-1].id
    branched = sync(store.branch, "c-1", at=2, expected_revision=loaded.revision)
    branched.messages += turn("other")
    sync(store.save, branched)
    record = sync(store.read_record, "c-1")
    assert record is not None and record.branches == [old_tip]
    current = sync(store.load, "c-1")
    assert current is not None
    stale_branch = conflicts(store.branch, "c-1", at=1, expected_revision=loaded.revision)
    back = sync(store.branch, "c-1", from_entry=old_tip, expected_revision=current.revision)
    record_back = sync(store.read_record, "c-1")
    assert record_back is not None
    return [
        texts(branched.messages),
        texts(back.messages),
        stale_branch,
        len(record_back.branches),
        record_back.head_id == old_tip,
    ]


def fork(store: ConversationStore) -> list[Any]:
    forked = sync(store.fork, "c-1", at=4, new_conversation_id="f-1", scope="carol")
    forked.messages += turn("forked")
    sync(store.save, forked)
    again = conflicts(store.fork, "c-1", new_conversation_id="f-1")
    record = sync(store.read_record, "f-1")
    assert record is not None
    original = sync(store.load, "c-1")
    reloaded = sync(store.load, "f-1")
    assert original is not None and reloaded is not None
    entries = sync(store.load_entries, "f-1")
    c1 = sync(store.load_entries, "c-1")
    assert entries is not None and c1 is not None
    shared = [a.id == b.id for a, b in zip(entries, c1, strict=False)]
    return [
        texts(reloaded.messages),
        texts(original.messages),
        again,
        record.forked_from,
        shared,
        record.scope,
    ]


def scopes(store: ConversationStore) -> list[Any]:
    sync(store.save, conversation("s-1", "mine"), scope="dave")
    listed = [r.conversation_id for r in sync(store.list_conversations, scope="dave")]
    hidden = sync(store.load, "s-1", scope="erin")
    shown = sync(store.load, "s-1", scope="dave")
    sync(store.delete, "s-1", scope="erin")  # another scope's conversation is left as it is
    still = sync(store.load, "s-1")
    newest = [r.conversation_id for r in sync(store.list_conversations, limit=2)]
    everyone = sorted(r.conversation_id for r in sync(store.list_conversations))
    return [listed, hidden, shown is not None, still is not None, newest, everyone]


def entries_and_delete(store: ConversationStore) -> list[Any]:
    entries = sync(store.load_entries, "f-1")
    assert entries is not None
    entry = sync(store.read_entry, entries[-1].id)
    assert isinstance(entry, ConversationEntry) and entry == entries[-1]
    with pytest.raises(LookupError):
        sync(store.read_entry, "no-such-entry")
    sync(store.delete, "c-1")
    gone = sync(store.load, "c-1")
    fork_survives = sync(store.load, "f-1")  # it shares c-1's entries: they stay
    assert fork_survives is not None
    sync(store.delete, "f-1")
    with pytest.raises(UserError):
        sync(store.fork, "c-1")
    recreated = conversation("c-1", "new")
    sync(store.save, recreated)
    return [entry.parent_id == entries[-2].id, gone, texts(fork_survives.messages), sync(store.load, "f-1")]


SCENARIO = (save_reload, conflict, branch_and_back, fork, scopes, entries_and_delete)


def run_scenario(store: ConversationStore) -> list[Any]:
    return [step(store) for step in SCENARIO]


def test_the_scenario_gives_the_same_results_on_both_stores(store: ConversationStore) -> None:
    reference = run_scenario(InMemoryConversationStore())
    assert run_scenario(store) == reference
    (reload_, conflict_, branch_, fork_, scope_, delete_) = reference
    assert reload_ == [
        ["q-one", "a-one", "q-two", "a-two", "q-three", "a-three"],
        ["a-two", "q-three", "a-three"],
        2,
        1,
    ]
    assert conflict_[:5] == [True, True, True, True, True]
    assert branch_[0] == ["q-one", "a-one", "q-other", "a-other"] and branch_[2] is True
    assert branch_[1][-2:] == ["q-four", "a-four"] and branch_[3:] == [1, True]
    assert fork_[0] == ["q-one", "a-one", "q-two", "a-two", "q-forked", "a-forked"]
    assert fork_[2:] == [True, "c-1", [True, True, True, True, False, False], "carol"]
    assert scope_ == [["s-1"], None, True, True, ["s-1", "f-1"], ["c-1", "f-1", "s-1"]]
    assert delete_ == [True, None, fork_[0], None]


def test_loading_costs_two_queries_whatever_the_length(django_assert_max_num_queries: Any) -> None:
    store = DjangoConversationStore()
    for conversation_id, length in (("short", 1), ("long", 60)):
        sync(store.save, conversation(conversation_id, *[str(i) for i in range(length)]))
        with django_assert_max_num_queries(2):
            loaded = sync(store.load, conversation_id)
        assert loaded is not None and len(loaded.messages) == 2 * length
        with django_assert_max_num_queries(2):
            window = sync(store.load, conversation_id, limit=5)
        assert window is not None and window.messages == loaded.messages[-5:]


def test_a_history_with_an_entry_gone_is_a_lookup_error() -> None:
    store = DjangoConversationStore()
    sync(store.save, conversation("broken", "one", "two"))
    entries = sync(store.load_entries, "broken")
    assert entries is not None
    from turnstate_app.contrib.pydantic_ai.models import StoredEntry

    StoredEntry.objects.filter(entry_id=entries[1].id).delete()
    with pytest.raises(LookupError):
        sync(store.read_history, entries[-1].id)
    assert len(sync(store.read_history, entries[-1].id, limit=2)) == 2  # the window never reaches the gap
