#!/usr/bin/env python
"""Where a 2 KB ``DjangoCheckpointSaver`` call on SQLite spends its time, beside ``SqliteSaver``.

Per call, in CPU time of the calling thread (``thread_time_ns``, so a busy machine's
preemption does not count): ours whole, ours inside the driver's ``execute`` and fetch,
and ``SqliteSaver`` whole, for ``put``, ``put_writes``, ``get_tuple`` and ``list``. Then the
``put`` statement alone on bare ``sqlite3`` connections: on the table as it was before
migration 0003 (``integer PRIMARY KEY AUTOINCREMENT``, Django's default), on the table as
migrated (a plain ``integer PRIMARY KEY``), and ``SqliteSaver``'s own statement on its own
table. The gap between the first two is what AUTOINCREMENT cost each insert. A diagnosis,
not a target: it prints and exits 0::

    .venv/bin/python bench/langgraph_sqlite_floor.py
"""

from __future__ import annotations

import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
sys.path[:] = [p for p in sys.path if Path(p or os.curdir).resolve() != BENCH_DIR]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench import langgraph_saver as lgs  # noqa: E402 - needs the repository root on sys.path
from bench.common import make_target  # noqa: E402

CLOCK = time.thread_time_ns
N = 300
ROUNDS = 6
VERSION = f"{1:032}.{1:016}"
ROWID = '"id" integer NOT NULL PRIMARY KEY'
THEIR_PUT = (
    "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, "
    "type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
THEIR_TABLE = (
    "CREATE TABLE checkpoints (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '', "
    "checkpoint_id TEXT NOT NULL, parent_checkpoint_id TEXT, type TEXT, checkpoint BLOB, metadata BLOB, "
    "PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id))"
)


class Spy:
    """A driver cursor whose ``execute`` and fetches add their CPU time to ``spent``."""

    def __init__(self, cursor: Any, spent: list[int]) -> None:
        self.cursor = cursor
        self.spent = spent

    def execute(self, *args: Any) -> Spy:
        start = CLOCK()
        self.cursor.execute(*args)
        self.spent.append(CLOCK() - start)
        return self

    def fetchall(self) -> Any:
        start = CLOCK()
        rows = self.cursor.fetchall()
        self.spent[-1] += CLOCK() - start
        return rows


@contextmanager
def spying(spent: list[int]) -> Iterator[None]:
    from turnstate_app.contrib.langgraph import execution

    real = execution._driver

    def driver(connection: Any) -> tuple[Any, int]:
        cursor, mode = real(connection)
        return Spy(cursor, spent), mode

    execution._driver = driver  # type: ignore[assignment]
    try:
        yield
    finally:
        execution._driver = real  # type: ignore[assignment]


def per_call(fn: Callable[..., Any], items: list[tuple[Any, ...]]) -> float:
    samples = []
    for item in items:
        start = CLOCK()
        fn(*item)
        samples.append(CLOCK() - start)
    return statistics.median(samples) / 1000


def one_round(saver: Any, tag: str, spent: list[int] | None) -> dict[str, float]:
    from langgraph.checkpoint.serde.types import INTERRUPT
    from langgraph.types import Interrupt

    puts = [
        (lgs.config_of(f"{tag}-{i}"), lgs.checkpoint_of(2_000, i, VERSION), {"source": "loop", "step": 1},
         {"messages": VERSION, "step": VERSION})
        for i in range(N)
    ]  # fmt: skip
    heads = [(lgs.config_of(item[0]["configurable"]["thread_id"]),) for item in puts]
    writes = [
        (
            lgs.config_of(item[0]["configurable"]["thread_id"], item[1]["id"]),
            [(INTERRUPT, [Interrupt(value={"question": "Go on?"}, id=f"i-{i}")]),
             ("messages", lgs.messages(2_000, i))],
            f"task-{i}",
        )
        for i, item in enumerate(puts)
    ]  # fmt: skip
    figures: dict[str, float] = {}
    for op, items in (("put", puts), ("put_writes", writes), ("get_tuple", heads), ("list", heads)):
        if spent is not None:
            spent.clear()
        method = getattr(saver, op)
        call = (lambda *a, method=method: list(method(*a))) if op == "list" else method
        figures[op] = per_call(call, items)
        if spent:
            figures[op + " in execute"] = statistics.median(spent) / 1000
    return figures


def statement_floor(django_table_sql: str, our_put: str) -> dict[str, float]:
    """The put statement alone, autocommit, on bare connections with Django's pragmas."""
    from turnstate_app.contrib.langgraph.keys import ROOT_NS_HASH

    folder = tempfile.mkdtemp(prefix="lgs-floor-")
    plain = django_table_sql.replace(" AUTOINCREMENT", "")
    autoincrement = plain.replace(ROWID, f"{ROWID} AUTOINCREMENT")
    variants = {
        "ours, id AUTOINCREMENT (before 0003)": (autoincrement, our_put),
        "ours, plain integer id (as migrated)": (plain, our_put),
        "SqliteSaver's statement and table": (THEIR_TABLE, THEIR_PUT),
    }
    conns = {}
    for number, (name, (table, _)) in enumerate(variants.items()):
        conn = sqlite3.connect(os.path.join(folder, f"{number}.sqlite3"), isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(table)
        conns[name] = conn
    body = os.urandom(2_300)
    medians: dict[str, list[float]] = {name: [] for name in variants}
    for round_no in range(ROUNDS):
        for name, (_, sql) in variants.items():
            samples = []
            for i in range(N):
                thread, checkpoint_id = f"r{round_no}-{i}", str(uuid.uuid4())
                params: tuple[Any, ...]
                if sql is THEIR_PUT:
                    params = (
                        thread,
                        "",
                        checkpoint_id,
                        None,
                        "msgpack",
                        body,
                        b'{"source": "loop", "step": 1}',
                    )
                else:
                    params = (thread, "", ROOT_NS_HASH, checkpoint_id, None, None, "msgpack", body,
                              '{"source": "loop", "step": 1}', "2026-12-03 18:20:10.123456")  # fmt: skip
                start = CLOCK()
                conns[name].execute(sql, params)
                samples.append(CLOCK() - start)
            medians[name].append(statistics.median(samples) / 1000)
    return {name: statistics.median(values[1:]) for name, values in medians.items()}


def main() -> int:
    target = make_target("sqlite")
    lgs.configure(target)
    from django.db import connection
    from langgraph.checkpoint.sqlite import SqliteSaver

    from turnstate_app.contrib.langgraph import DjangoCheckpointSaver, statements

    conn = sqlite3.connect(os.path.join(target.tmpdir, "langgraph.sqlite3"), check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    theirs = SqliteSaver(conn)
    theirs.setup()
    ours = DjangoCheckpointSaver()
    spent: list[int] = []
    results: dict[str, list[dict[str, float]]] = {"ours": [], "theirs": []}
    with spying(spent):
        for round_no in range(ROUNDS):
            results["ours"].append(one_round(ours, f"o{round_no}", spent))
            results["theirs"].append(one_round(theirs, f"t{round_no}", None))
    print(f"CPU µs per 2 KB call, median of {ROUNDS - 1} rounds of {N} (first dropped):")
    for op in ("put", "put_writes", "get_tuple", "list"):
        mine = statistics.median(r[op] for r in results["ours"][1:])
        inside = statistics.median(r[op + " in execute"] for r in results["ours"][1:])
        other = statistics.median(r[op] for r in results["theirs"][1:])
        print(
            f"  {op:<11} ours {mine:6.1f} (driver execute+fetch {inside:5.1f}, the rest {mine - inside:5.1f})"
            f"   SqliteSaver {other:6.1f}   ratio {mine / other:.2f}"
        )
    with connection.cursor() as cursor:
        cursor.execute("SELECT sql FROM sqlite_master WHERE name = 'turnstate_langgraph_checkpoint'")
        (table_sql,) = cursor.fetchone()
    print("The put statement alone, CPU µs (bare sqlite3, autocommit):")
    for name, value in statement_floor(
        table_sql, statements.put_checkpoint("default").replace("%s", "?")
    ).items():
        print(f"  {name:<40} {value:6.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
