"""The saver's own promises beyond the conformance suite: query counts, exact keys, limits, the base API."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, empty_checkpoint
from langgraph.checkpoint.serde.types import INTERRUPT

from turnstate_app.contrib.langgraph import DjangoCheckpointSaver, StrictSerializer
from turnstate_app.errors import CheckpointFieldError

pytestmark = pytest.mark.django_db(transaction=True)


def cfg(thread: str, ns: str = "", checkpoint_id: str | None = None) -> RunnableConfig:
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
    if checkpoint_id:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


BIG = "b" * 70_000  # kept in a row of its own on every database (rows.inline_max)


def put_chain(
    saver: DjangoCheckpointSaver, thread: str, n: int, ns: str = "", b: str = "b"
) -> list[RunnableConfig]:
    """``n`` checkpoints, each changing channel ``a`` and keeping ``b``, each with one pending write."""
    stored: list[RunnableConfig] = []
    parent: str | None = None
    version: str | None = None
    for step in range(n):
        version = saver.get_next_version(version, None)
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"a": f"a{step}", "b": b}
        checkpoint["channel_versions"] = {"a": version, "b": "1"}
        new_versions: ChannelVersions = {"a": version, "b": "1"} if step == 0 else {"a": version}
        config = saver.put(
            cfg(thread, ns, parent), checkpoint, {"source": "loop", "step": step}, new_versions
        )
        saver.put_writes(config, [("w", step)], task_id=f"task-{step}")
        stored.append(config)
        parent = config["configurable"]["checkpoint_id"]
    return stored


@pytest.mark.parametrize(("b", "queries"), [("b", 1), (BIG, 2)], ids=["inline", "out-of-row"])
def test_get_tuple_costs_one_query_and_one_more_for_large_values(
    django_assert_max_num_queries: Any, b: str, queries: int
) -> None:
    saver = DjangoCheckpointSaver()
    thread = f"t-{uuid.uuid4()}"
    put_chain(saver, thread, 3, b=b)
    with django_assert_max_num_queries(queries):
        found = saver.get_tuple(cfg(thread))
    assert found is not None
    assert found.checkpoint["channel_values"] == {"a": "a2", "b": b}
    assert found.pending_writes == [("task-2", "w", 2)]


@pytest.mark.parametrize(("n", "b", "queries"), [(5, "b", 1), (230, "b", 1), (5, BIG, 2), (230, BIG, 4)])
def test_list_costs_one_query_and_one_per_hundred_with_large_values(
    django_assert_max_num_queries: Any, n: int, b: str, queries: int
) -> None:
    saver = DjangoCheckpointSaver()
    thread = f"t-{uuid.uuid4()}"
    put_chain(saver, thread, n, b=b)
    with django_assert_max_num_queries(queries):
        listed = list(saver.list(cfg(thread)))
    assert len(listed) == n
    assert [t.metadata["step"] for t in listed] == list(range(n - 1, -1, -1))
    assert all(t.checkpoint["channel_values"]["b"] == b for t in listed)
    assert [t.pending_writes for t in listed[-2:]] == [[("task-1", "w", 1)], [("task-0", "w", 0)]]


def test_ids_are_exact_on_every_database() -> None:
    saver = DjangoCheckpointSaver()
    threads = ["T-1", "t-1", "t-1 ", "té", "te", "ß", "ss"]
    suffix = uuid.uuid4().hex
    for thread in threads:
        put_chain(saver, thread + suffix, 1)
    for thread in threads:
        found = saver.get_tuple(cfg(thread + suffix))
        assert found is not None and found.config["configurable"]["thread_id"] == thread + suffix
        assert len(list(saver.list(cfg(thread + suffix)))) == 1


def test_a_deep_long_namespace_is_stored_and_found_exactly() -> None:
    saver = DjangoCheckpointSaver()
    thread = f"t-{uuid.uuid4()}"
    levels = [f"node_{i}:{uuid.uuid4()}" + "é" * 230 for i in range(4)]
    ns = "|".join(levels)
    assert len(ns) >= 1000 and ns.count("|") == 3
    put_chain(saver, thread, 2, ns=ns)
    put_chain(saver, thread, 1, ns=ns.upper())  # differs only in case
    found = saver.get_tuple(cfg(thread, ns))
    assert found is not None
    assert found.config["configurable"]["checkpoint_ns"] == ns
    assert found.checkpoint["channel_values"]["a"] == "a1"
    assert [t.config["configurable"]["checkpoint_ns"] for t in saver.list(cfg(thread, ns))] == [ns, ns]


@pytest.mark.parametrize(
    ("thread", "problem"),
    [("x" * 256, "the limit is 255"), ("a\x00b", "NUL"), ("", "must not be empty")],
)
def test_bad_thread_ids_are_refused_before_writing(thread: str, problem: str) -> None:
    with pytest.raises(CheckpointFieldError, match=problem):
        DjangoCheckpointSaver().put(cfg(thread), empty_checkpoint(), {}, {})


def test_special_writes_overwrite_and_others_keep_the_first() -> None:
    saver = DjangoCheckpointSaver()
    [config] = put_chain(saver, f"t-{uuid.uuid4()}", 1)
    saver.put_writes(config, [("w", "second")], task_id="task-0")
    saver.put_writes(config, [(INTERRUPT, "first")], task_id="task-9")
    saver.put_writes(config, [(INTERRUPT, "second")], task_id="task-9")
    found = saver.get_tuple(config)
    assert found is not None
    assert sorted(found.pending_writes or []) == [("task-0", "w", 0), ("task-9", INTERRUPT, "second")]


def test_versions_increase() -> None:
    saver = DjangoCheckpointSaver()
    first = saver.get_next_version(None, None)
    second = saver.get_next_version(first, None)
    assert first < second and second.startswith(f"{2:010}.")


def test_a_version_is_short_and_forks_of_one_step_differ() -> None:
    """Every checkpoint body names each channel's version, some several times: its length is paid
    again in every checkpoint of a thread."""
    saver = DjangoCheckpointSaver()
    current = saver.get_next_version(None, None)
    forks = {saver.get_next_version(current, None) for _ in range(200)}
    assert len(forks) == 200
    assert max(len(version) for version in forks) <= 23


def test_a_version_follows_one_written_in_the_longer_form() -> None:
    """Threads stored before keep their ``<32 digits>.<16 digits>`` versions; LangGraph compares a
    channel's versions as text, so the next one must sort after them."""
    saver = DjangoCheckpointSaver()
    for step in (1, 9, 10, 12_345):
        longer = f"{step:032}.{0.9999999999999999:016}"
        following = saver.get_next_version(longer, None)
        assert following > longer and following.startswith(f"{step + 1:010}.")
        assert saver.get_next_version(following, None) > following


def test_with_allowlist_returns_a_working_clone_on_the_same_database() -> None:
    saver = DjangoCheckpointSaver(using="default")
    clone = saver.with_allowlist([("tests.contrib.langgraph.graphs", "Itinerary")])
    assert clone is not saver and isinstance(clone, DjangoCheckpointSaver)
    assert clone.using == "default"
    assert isinstance(clone.serde, StrictSerializer)
    thread = f"t-{uuid.uuid4()}"
    put_chain(clone, thread, 2)
    found = saver.get_tuple(cfg(thread))
    assert found is not None and found.checkpoint["channel_values"]["a"] == "a1"


async def test_the_inherited_get_aget_and_delta_history_work() -> None:
    from asgiref.sync import sync_to_async

    saver = DjangoCheckpointSaver()
    thread = f"t-{uuid.uuid4()}"
    stored = await sync_to_async(put_chain)(saver, thread, 3)
    got = await sync_to_async(saver.get)(cfg(thread))
    assert got is not None and got["id"] == stored[-1]["configurable"]["checkpoint_id"]
    agot = await saver.aget(stored[0])
    assert agot is not None and agot["channel_values"]["a"] == "a0"
    history = await sync_to_async(saver.get_delta_channel_history)(config=stored[-1], channels=["w", "a"])
    # The ancestors' writes, oldest first ("w" has no stored value: the walk reaches the root),
    # and for "a" the parent's stored value as seed.
    assert [w[2] for w in history["w"]["writes"]] == [0, 1]
    assert history["a"]["seed"] == "a1"
    ahistory = await saver.aget_delta_channel_history(config=stored[-1], channels=["w"])
    assert ahistory == {"w": history["w"]}
