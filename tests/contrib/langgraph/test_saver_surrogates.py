"""A lone surrogate in an id, a namespace or run metadata is a ``CheckpointFieldError``.

No database stores one as text: before, a thread id holding one raised a bare
``UnicodeEncodeError`` from the driver (or from hashing the namespace), and run metadata holding
one a ``DataError`` from PostgreSQL's JSON parser, which also poisoned the caller's transaction.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.db import transaction
from langgraph.checkpoint.base import empty_checkpoint

from tests.contrib.langgraph.graphs import config, trip_graph
from tests.contrib.langgraph.test_saver import cfg
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver
from turnstate_app.errors import CheckpointFieldError

pytestmark = pytest.mark.django_db(transaction=True)

LONE = "\ud800"


def thread() -> str:
    return f"t-{uuid.uuid4()}"


@pytest.mark.parametrize(
    ("field", "conf", "metadata"),
    [
        ("thread_id", {"thread_id": f"t{LONE}"}, {}),
        ("checkpoint_ns", {"checkpoint_ns": f"node:{LONE}"}, {}),
        ("checkpoint_id", {"checkpoint_id": f"c{LONE}"}, {}),
        ("metadata run_id", {}, {"run_id": f"run{LONE}"}),
        ("metadata", {}, {"note": f"x{LONE}"}),
        ("metadata", {}, {f"k{LONE}": 1}),
        ("metadata", {}, {"deep": [{"list": ["ok", LONE]}]}),
    ],
    ids=["thread", "namespace", "parent", "run_id", "value", "key", "nested"],
)
def test_put_refuses_a_lone_surrogate_naming_the_field(
    field: str, conf: dict[str, Any], metadata: dict[str, Any]
) -> None:
    saver = DjangoCheckpointSaver()
    config_ = cfg(thread())
    config_["configurable"].update(conf)
    with pytest.raises(CheckpointFieldError, match="lone surrogate") as refused:
        saver.put(config_, empty_checkpoint(), metadata, {})  # type: ignore[arg-type]
    assert refused.value.field == field


@pytest.mark.parametrize(
    ("field", "task_id", "channel", "task_path"),
    [
        ("task_id", f"task{LONE}", "w", ""),
        ("channel", "task", f"w{LONE}", ""),
        ("task_path", "task", "w", f"p{LONE}"),
    ],
)
def test_put_writes_refuses_a_lone_surrogate(field: str, task_id: str, channel: str, task_path: str) -> None:
    saver = DjangoCheckpointSaver()
    stored = saver.put(cfg(thread()), empty_checkpoint(), {}, {})
    with pytest.raises(CheckpointFieldError, match="lone surrogate") as refused:
        saver.put_writes(stored, [(channel, 1)], task_id=task_id, task_path=task_path)
    assert refused.value.field == field


def test_reads_and_erasure_refuse_it_too() -> None:
    saver = DjangoCheckpointSaver()
    for call in (
        lambda: saver.get_tuple(cfg(f"t{LONE}")),
        lambda: list(saver.list(cfg(f"t{LONE}"))),
        lambda: list(saver.list(None, filter={"source": f"x{LONE}"})),
        lambda: saver.delete_thread(f"t{LONE}"),
        lambda: saver.delete_for_runs(["run-1", f"run{LONE}"]),
    ):
        with pytest.raises(CheckpointFieldError, match="lone surrogate"):
            call()


def test_a_refusal_leaves_the_callers_transaction_usable() -> None:
    saver = DjangoCheckpointSaver()
    kept = thread()
    with transaction.atomic():
        with pytest.raises(CheckpointFieldError):
            saver.put(cfg(kept), empty_checkpoint(), {"note": LONE}, {})  # type: ignore[typeddict-unknown-key]
        saver.put(cfg(kept), empty_checkpoint(), {"note": "fine"}, {})  # type: ignore[typeddict-unknown-key]
    found = saver.get_tuple(cfg(kept))
    assert found is not None and found.metadata["note"] == "fine"  # type: ignore[typeddict-item]


def test_a_graph_run_on_such_a_thread_is_refused_with_the_field_named() -> None:
    graph = trip_graph(DjangoCheckpointSaver())
    with pytest.raises(CheckpointFieldError, match="thread_id"):
        graph.invoke({"transcript": []}, config(f"trip-{LONE}"))
    with pytest.raises(CheckpointFieldError, match="metadata"):
        graph.invoke({"transcript": []}, {**config(thread()), "metadata": {"user": f"ann{LONE}"}})
