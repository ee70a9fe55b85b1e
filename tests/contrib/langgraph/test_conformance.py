"""LangGraph's own conformance suite, through the async methods and again through the sync ones.

The suite calls only the ``a*`` methods; the second run goes through a subclass whose
``a*`` methods call the sync methods on a worker thread, as LangGraph's sync graphs do.
Every capability must be detected and pass every one of its tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import Capability

from tests.encryption_support import KEY_A
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver

pytestmark = pytest.mark.django_db(transaction=True)

EXPECTED = {
    "put": 17,
    "put_writes": 10,
    "get_tuple": 10,
    "list": 16,
    "delete_thread": 5,
    "delete_for_runs": 7,
    "copy_thread": 8,
    "prune": 8,
}


class SyncPathSaver(DjangoCheckpointSaver):
    """Each ``a*`` method is the sync method on a worker thread (``asyncio.to_thread``)."""

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self, config: Any, *, filter: Any = None, before: Any = None, limit: Any = None
    ) -> AsyncIterator[CheckpointTuple]:  # noqa: A002
        found = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for item in found:
            yield item

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)


def test_the_suite_has_the_capabilities_this_module_expects() -> None:
    assert {c.value for c in Capability} == set(EXPECTED)
    assert sum(EXPECTED.values()) == 81


@pytest.mark.parametrize(
    ("saver_class", "encrypted"),
    [(DjangoCheckpointSaver, False), (SyncPathSaver, False), (DjangoCheckpointSaver, True)],
    ids=["async", "sync", "async-encrypted"],
)
async def test_conformance(
    saver_class: type[DjangoCheckpointSaver],
    encrypted: bool,
    capsys: pytest.CaptureFixture[str],
    turnstate_settings: dict[str, Any],
) -> None:
    if encrypted:  # every value at rest a Fernet token: the saver behaves the same
        turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]

    @checkpointer_test(name=f"DjangoCheckpointSaver-{saver_class.__name__}")
    async def factory() -> AsyncIterator[DjangoCheckpointSaver]:
        yield saver_class()

    report = await validate(factory)
    report.print_report()
    counts = {
        name: (result.tests_passed, result.tests_passed + result.tests_failed)
        for name, result in report.results.items()
    }
    print({"path": saver_class.__name__, "counts": counts})
    failures = [f for result in report.results.values() for f in result.failures]
    assert failures == []
    assert counts == {name: (total, total) for name, total in EXPECTED.items()}
    assert all(result.detected for result in report.results.values())
