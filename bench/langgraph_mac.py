#!/usr/bin/env python
"""What the saver's row MACs cost: ``put`` and ``get_tuple`` with the MAC and without, alternating.

Two threads per value size (a checkpoint with a 2 KB value, kept inside its row; one with a 200 KB
value, kept in a row of its own): one written and read as the saver runs (every row's MAC made on
write and checked on read), one with the MAC made a constant and its check always true. Each
iteration times one ``put`` and one ``get_tuple`` of the head on each, the two taking turns first,
so both see the same load. It reports the median time per call of each and their ratio. A
benchmark, not a test: it prints a table and exits 0. From the repository root::

    .venv/bin/python bench/langgraph_mac.py --database sqlite
    .venv/bin/python bench/langgraph_mac.py --database postgres://postgres@127.0.0.1:5432/turnstate_bench_mac
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
sys.path[:] = [p for p in sys.path if Path(p or os.curdir).resolve() != BENCH_DIR]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.common import (  # noqa: E402 - needs the repository root on sys.path
    configure_django,
    ensure_postgres_database,
    make_target,
)

SIZES = {"2 KB": 2_000, "200 KB": 200_000}


@contextmanager
def without_macs() -> Iterator[None]:
    """The MAC made a constant and its check always true: what the saver cost before."""
    from turnstate_app import integrity

    made, checked = integrity.row_mac, integrity.row_verifies
    integrity.row_mac = lambda *args: "0" * integrity.MAC_LENGTH  # type: ignore[assignment]
    integrity.row_verifies = lambda *args: True  # type: ignore[assignment]
    try:
        yield
    finally:
        integrity.row_mac, integrity.row_verifies = made, checked


def thread_of(saver: Any, size: int) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """A ``put`` of the next checkpoint of a new thread, and a ``get_tuple`` of its head."""
    from langgraph.checkpoint.base import empty_checkpoint

    thread = f"mac-{uuid.uuid4().hex}"
    state: dict[str, Any] = {
        "config": {"configurable": {"thread_id": thread, "checkpoint_ns": ""}},
        "step": 0,
    }

    def put() -> Any:
        step = state["step"] = state["step"] + 1
        checkpoint = empty_checkpoint()
        version = saver.get_next_version(None if step == 1 else f"{step - 1}", None)
        checkpoint["channel_values"] = {"messages": "m" * size, "step": step}
        checkpoint["channel_versions"] = {"messages": version, "step": version}
        state["config"] = saver.put(
            state["config"], checkpoint, {"step": step}, {"messages": version, "step": version}
        )
        return state["config"]

    def get() -> Any:
        return saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})

    return put, get


def timed(call: Callable[[], Any]) -> int:
    started = time.perf_counter_ns()
    call()
    return time.perf_counter_ns() - started


def measure(saver: Any, size: int, iterations: int) -> dict[tuple[str, str], list[int]]:
    """Nanoseconds per call, by (call, arm)."""
    arms = {"with": thread_of(saver, size), "without": thread_of(saver, size)}
    samples: dict[tuple[str, str], list[int]] = {}
    for iteration in range(iterations):
        for arm in ("with", "without") if iteration % 2 else ("without", "with"):
            put, get = arms[arm]
            with without_macs() if arm == "without" else nullcontext():
                samples.setdefault(("put", arm), []).append(timed(put))
                samples.setdefault(("get_tuple", arm), []).append(timed(get))
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database", default="sqlite")
    parser.add_argument("--iterations", type=int, default=400)
    args = parser.parse_args()
    target = make_target(args.database)
    if target.vendor == "postgresql":
        ensure_postgres_database(target.conninfo)
    configure_django(target, extra_apps=["turnstate_app.contrib.langgraph"])
    from turnstate_app.contrib.langgraph import DjangoCheckpointSaver

    saver = DjangoCheckpointSaver()
    print(f"{target.vendor}: median microseconds per call over {args.iterations} alternations")
    print(f"{'call':<18}{'with MAC':>12}{'without':>12}{'ratio':>8}")
    for label, size in SIZES.items():
        samples = measure(saver, size, args.iterations)
        for call in ("put", "get_tuple"):
            with_mac = statistics.median(samples[(call, "with")]) / 1000
            without = statistics.median(samples[(call, "without")]) / 1000
            print(f"{call + ' ' + label:<18}{with_mac:>12.1f}{without:>12.1f}{with_mac / without:>8.3f}")


if __name__ == "__main__":
    main()
