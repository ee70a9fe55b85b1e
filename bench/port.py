#!/usr/bin/env python
"""Per-operation latency of ``ModelCheckpointCommandPort`` against the raw driver floor.

A benchmark, not a test: it prints a table, writes ``bench/results/port-<vendor>.json``
and exits 0 whether or not the targets are met. Run it from the repository root::

    .venv/bin/python bench/port.py --database sqlite
    .venv/bin/python bench/port.py --database postgres://postgres@127.0.0.1:5432/turnstate_bench

See ``bench/README.md`` for what each row measures and the latest figures.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import json
import os
import pstats
import shutil
import sqlite3
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.common import (  # noqa: E402 - needs the repository root on sys.path
    FLOOR_MAC,
    SQL_CLAIM,
    SQL_READ,
    SQL_WRITE,
    TABLE,
    TASK_ID,
    Target,
    check_statements,
    configure_django,
    ensure_postgres_database,
    make_target,
    make_values,
    median,
    percentile,
    qmark,
    rotation,
    sqlite_connect,
    stored_params,
    timed_async,
    timed_sync,
    us,
)
from bench.common import environment as common_environment  # noqa: E402

OPS = ("upsert_new", "overwrite", "read_hit", "read_miss", "claim_new")
OP_TITLES = {
    "upsert_new": "upsert (new key)",
    "overwrite": "upsert (existing key)",
    "read_hit": "read (hit)",
    "read_miss": "read (miss)",
    "claim_new": "claim (new key)",
}
# Phases that start from a table seeded with every contender's n rows; the others start empty.
SEEDED_OPS = frozenset({"overwrite", "read_hit", "read_miss"})

# Ratio of the port's sync median to the sync floor's median, per vendor and operation.
SYNC_TARGETS: dict[str, dict[str, float]] = {
    "postgresql": {"upsert_new": 1.15, "overwrite": 1.15, "read_hit": 1.3, "read_miss": 1.3},
    "sqlite": {"upsert_new": 1.5, "overwrite": 1.5, "read_hit": 2.5, "read_miss": 2.5},
}
# The async API may cost the sync twin plus one no-op sync_to_async hop, with this much noise on the hop.
HOP_NOISE = 1.25

Item = tuple[str, str, str, str]  # thread_id, checkpoint_id, key, value
SyncOp = Callable[[str, str, str, str], object]
AsyncOp = Callable[[str, str, str, str], Awaitable[object]]


# -- configuration --------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--database", required=True, help="'sqlite' or a postgres:// URL")
    parser.add_argument("--n", type=int, default=2000, help="operations per phase per contender per round")
    parser.add_argument("--value-bytes", type=int, default=2048, help="size of each stored value")
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds (after one warm-up round)")
    parser.add_argument("--chunk", type=int, default=100, help="ops a contender runs before the next one")
    parser.add_argument(
        "--prepare-threshold",
        type=int,
        default=None,
        help="PostgreSQL: set DATABASES OPTIONS['prepare_threshold'] (Django's default disables preparing)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="truncate the table even if it holds rows not written by the bench",
    )
    parser.add_argument("--profile", action="store_true", help="after the run, profile the port's sync path")
    parser.add_argument("--output", type=Path, default=None, help="JSON path (default bench/results/...)")
    args = parser.parse_args(argv)
    if args.n < 1 or args.repeat < 1 or args.chunk < 1 or args.value_bytes < 1:
        parser.error("--n, --repeat, --chunk and --value-bytes must be positive")
    return args


# -- administration: truncate and seed, through a connection no contender uses ---------------------


class Admin:
    def __init__(self, target: Target) -> None:
        self.vendor = target.vendor
        self._pg: Any = None
        self._lite: sqlite3.Connection | None = None
        if target.vendor == "postgresql":
            import psycopg

            self._pg = psycopg.connect(target.conninfo, autocommit=True)
        else:
            self._lite = sqlite_connect(target.sqlite_path)

    def server_version(self) -> str:
        if self._pg is not None:
            return str(self._pg.execute("SELECT version()").fetchone()[0])
        return f"SQLite {sqlite3.sqlite_version}"

    def foreign_rows(self) -> int:
        """Rows this bench did not write (its thread ids all start with ``bench-``)."""
        sql = f"SELECT count(*) FROM \"{TABLE}\" WHERE thread_id NOT LIKE 'bench-%'"
        if self._pg is not None:
            return int(self._pg.execute(sql).fetchone()[0])
        assert self._lite is not None
        return int(self._lite.execute(sql).fetchone()[0])

    def truncate(self) -> None:
        if self._pg is not None:
            self._pg.execute(f'TRUNCATE "{TABLE}"')
        else:
            assert self._lite is not None
            self._lite.execute(f'DELETE FROM "{TABLE}"')

    def seed(self, rows: list[Item]) -> None:
        """Rows written as the port writes them, with their real MACs: the port reads them back."""
        now = datetime.now(UTC)
        if self._pg is not None:
            params_pg = [stored_params(t, c, k, v, TASK_ID, now) for t, c, k, v in rows]
            with self._pg.cursor() as cur:
                cur.executemany(SQL_WRITE, params_pg)
            self._pg.execute(f'ANALYZE "{TABLE}"')
        else:
            assert self._lite is not None
            stamp = str(now.replace(tzinfo=None))
            params_lite = [stored_params(t, c, k, v, TASK_ID, stamp) for t, c, k, v in rows]
            self._lite.execute("BEGIN IMMEDIATE")
            self._lite.executemany(qmark(SQL_WRITE), params_lite)
            self._lite.execute("COMMIT")

    def close(self) -> None:
        if self._pg is not None:
            self._pg.close()
        if self._lite is not None:
            self._lite.close()


# -- contenders -------------------------------------------------------------------------------------


@dataclass
class Contender:
    name: str
    label: str
    sync_ops: dict[str, SyncOp] | None = None
    async_ops: dict[str, AsyncOp] | None = None
    closers: list[Callable[[], object]] = field(default_factory=list)

    @property
    def is_async(self) -> bool:
        return self.async_ops is not None


def sqlite_floor(path: str, *, check_same_thread: bool = True) -> Contender:
    conn = sqlite_connect(path, check_same_thread=check_same_thread)
    cur = conn.cursor()
    read_sql, write_sql, claim_sql = qmark(SQL_READ), qmark(SQL_WRITE), qmark(SQL_CLAIM)

    def read(t: str, c: str, k: str, v: str) -> str | None:
        row = cur.execute(read_sql, (t, c, k)).fetchone()
        return None if row is None else str(row[0])

    def write(t: str, c: str, k: str, v: str) -> None:
        now = str(datetime.now(UTC).replace(tzinfo=None))
        cur.execute(write_sql, (t, c, k, v, None, FLOOR_MAC, TASK_ID, now, now))

    def claim(t: str, c: str, k: str, v: str) -> bool:
        now = str(datetime.now(UTC).replace(tzinfo=None))
        return cur.execute(claim_sql, (t, c, k, v, None, FLOOR_MAC, TASK_ID, now, now)).rowcount == 1

    ops: dict[str, SyncOp] = {
        "upsert_new": write,
        "overwrite": write,
        "read_hit": read,
        "read_miss": read,
        "claim_new": claim,
    }
    return Contender("floor", "floor sqlite3", sync_ops=ops, closers=[conn.close])


def psycopg_floor(conninfo: str) -> Contender:
    import psycopg

    conn = psycopg.connect(conninfo, autocommit=True)
    cur = conn.cursor()  # psycopg.Cursor: server-side binding, as the port's

    def read(t: str, c: str, k: str, v: str) -> str | None:
        cur.execute(SQL_READ, (t, c, k), prepare=True)
        row = cur.fetchone()
        return None if row is None else str(row[0])

    def write(t: str, c: str, k: str, v: str) -> None:
        now = datetime.now(UTC)
        cur.execute(SQL_WRITE, (t, c, k, v, None, FLOOR_MAC, TASK_ID, now, now), prepare=True)

    def claim(t: str, c: str, k: str, v: str) -> bool:
        now = datetime.now(UTC)
        cur.execute(SQL_CLAIM, (t, c, k, v, None, FLOOR_MAC, TASK_ID, now, now), prepare=True)
        return cur.rowcount == 1

    ops: dict[str, SyncOp] = {
        "upsert_new": write,
        "overwrite": write,
        "read_hit": read,
        "read_miss": read,
        "claim_new": claim,
    }
    return Contender("floor", "floor psycopg", sync_ops=ops, closers=[conn.close])


def via_hop(floor: Contender) -> Contender:
    """The sync floor, each call behind its own ``sync_to_async(thread_sensitive=True)`` hop.

    A diagnostic: its distance to the sync floor is what one hop costs around real I/O,
    which the no-op hop understates (the waiting loop thread goes to sleep and must be woken).
    """
    from asgiref.sync import sync_to_async

    assert floor.sync_ops is not None
    ops: dict[str, AsyncOp] = {
        op: sync_to_async(fn, thread_sensitive=True) for op, fn in floor.sync_ops.items()
    }
    return Contender("floor_hop", floor.label + " via hop", async_ops=ops, closers=floor.closers)


def psycopg_async_floor(conninfo: str, loop: asyncio.AbstractEventLoop) -> Contender:
    import psycopg

    conn = loop.run_until_complete(psycopg.AsyncConnection.connect(conninfo, autocommit=True))
    cur = conn.cursor()

    async def read(t: str, c: str, k: str, v: str) -> str | None:
        await cur.execute(SQL_READ, (t, c, k), prepare=True)
        row = await cur.fetchone()
        return None if row is None else str(row[0])

    async def write(t: str, c: str, k: str, v: str) -> None:
        now = datetime.now(UTC)
        await cur.execute(SQL_WRITE, (t, c, k, v, None, FLOOR_MAC, TASK_ID, now, now), prepare=True)

    async def claim(t: str, c: str, k: str, v: str) -> bool:
        now = datetime.now(UTC)
        await cur.execute(SQL_CLAIM, (t, c, k, v, None, FLOOR_MAC, TASK_ID, now, now), prepare=True)
        return cur.rowcount == 1

    ops: dict[str, AsyncOp] = {
        "upsert_new": write,
        "overwrite": write,
        "read_hit": read,
        "read_miss": read,
        "claim_new": claim,
    }

    def close() -> None:
        loop.run_until_complete(conn.close())

    return Contender("floor_async", "floor psycopg async", async_ops=ops, closers=[close])


def port_sync(port: Any) -> Contender:
    def read(t: str, c: str, k: str, v: str) -> str | None:
        result: str | None = port.read_metadata_sync(thread_id=t, checkpoint_id=c, key=k)
        return result

    def write(t: str, c: str, k: str, v: str) -> None:
        port.write_metadata_sync(thread_id=t, checkpoint_id=c, key=k, value=v, task_id=TASK_ID)

    def claim(t: str, c: str, k: str, v: str) -> bool:
        return bool(port.claim_metadata_sync(thread_id=t, checkpoint_id=c, key=k, value=v, task_id=TASK_ID))

    ops: dict[str, SyncOp] = {
        "upsert_new": write,
        "overwrite": write,
        "read_hit": read,
        "read_miss": read,
        "claim_new": claim,
    }
    return Contender("port_sync", "port sync", sync_ops=ops)


def port_async(port: Any) -> Contender:
    def read(t: str, c: str, k: str, v: str) -> Awaitable[object]:
        return port.read_metadata(thread_id=t, checkpoint_id=c, key=k)  # type: ignore[no-any-return]

    def write(t: str, c: str, k: str, v: str) -> Awaitable[object]:
        return port.write_metadata(  # type: ignore[no-any-return]
            thread_id=t, checkpoint_id=c, key=k, value=v, task_id=TASK_ID
        )

    def claim(t: str, c: str, k: str, v: str) -> Awaitable[object]:
        return port.claim_metadata(  # type: ignore[no-any-return]
            thread_id=t, checkpoint_id=c, key=k, value=v, task_id=TASK_ID
        )

    ops: dict[str, AsyncOp] = {
        "upsert_new": write,
        "overwrite": write,
        "read_hit": read,
        "read_miss": read,
        "claim_new": claim,
    }
    return Contender("port_async", "port async", async_ops=ops)


def _noop() -> None:
    return None


def noop_hop() -> Contender:
    """``sync_to_async(noop, thread_sensitive=True)``, built once as the port builds its hops."""
    from asgiref.sync import sync_to_async

    hop = sync_to_async(_noop, thread_sensitive=True)

    def call(t: str, c: str, k: str, v: str) -> Awaitable[object]:
        return hop()

    return Contender("hop", "no-op sync_to_async hop", async_ops=dict.fromkeys(OPS, call))


# -- the run ----------------------------------------------------------------------------------------


def make_items(contender: str, op: str, round_label: str, n: int, values: list[str]) -> list[Item]:
    thread_id = f"bench-{contender}"
    checkpoint_id = f"round-{round_label}"
    if op == "read_miss":
        return [(thread_id, checkpoint_id, f"absent:{i:06d}", "") for i in range(n)]
    if op == "claim_new":
        return [(thread_id, checkpoint_id, f"claim:{i:06d}", values[i % len(values)]) for i in range(n)]
    shift = 1 if op == "overwrite" else 0
    return [(thread_id, checkpoint_id, f"k:{i:06d}", values[(i + shift) % len(values)]) for i in range(n)]


def check_results(op: str, contender: Contender, items: list[Item], results: list[object]) -> None:
    if contender.name == "hop":
        return
    for (_t, _c, key, value), result in zip(items, results, strict=True):
        if op == "read_hit":
            ok = result == value
        elif op == "read_miss":
            ok = result is None
        elif op == "claim_new":
            ok = result is True
        else:
            ok = result is None
        if not ok:
            raise SystemExit(f"{contender.label}: {op} on {key!r} returned {result!r}")


def run_phase(
    op: str,
    round_no: int,
    round_label: str,
    n: int,
    chunk: int,
    contenders: list[Contender],
    admin: Admin,
    loop: asyncio.AbstractEventLoop,
    values: list[str],
) -> dict[str, list[int]]:
    """One phase: every contender runs ``n`` ops of ``op``, alternating in chunks."""
    items = {c.name: make_items(c.name, op, round_label, n, values) for c in contenders}
    admin.truncate()
    if op in SEEDED_OPS:
        seeds = [
            row
            for c in contenders
            if c.name != "hop"
            for row in make_items(c.name, "seed", round_label, n, values)
        ]
        admin.seed(seeds)
    samples: dict[str, list[int]] = {c.name: [] for c in contenders}
    for j, start in enumerate(range(0, n, chunk)):
        for contender in rotation(contenders, j, round_no):
            part = items[contender.name][start : start + chunk]
            if contender.async_ops is not None:
                got, results = loop.run_until_complete(timed_async(contender.async_ops[op], part))
            else:
                assert contender.sync_ops is not None
                got, results = timed_sync(contender.sync_ops[op], part)
            check_results(op, contender, part, results)
            samples[contender.name].extend(got)
    return samples


# -- statistics and report -------------------------------------------------------------------------


@dataclass
class Row:
    op: str
    contender: str
    label: str
    median_us: float
    p95_us: float
    mean_us: float
    min_us: float
    count: int
    round_medians_us: list[float]
    ratio: float | None = None  # median / sync floor median
    round_ratios: list[float] = field(default_factory=list)
    ratio_async_floor: float | None = None
    target: float | None = None
    passed: bool | None = None


def summarize(
    vendor: str, contenders: list[Contender], rounds: list[dict[str, dict[str, list[int]]]]
) -> tuple[list[Row], list[dict[str, Any]]]:
    rows: list[Row] = []
    async_checks: list[dict[str, Any]] = []
    for op in OPS:
        by_name: dict[str, Row] = {}
        for c in contenders:
            per_round = [r[op][c.name] for r in rounds]
            pooled = [x for part in per_round for x in part]
            by_name[c.name] = Row(
                op=op,
                contender=c.name,
                label=c.label,
                median_us=us(median(pooled)),
                p95_us=us(percentile(pooled, 95)),
                mean_us=us(sum(pooled) / len(pooled)),
                min_us=us(min(pooled)),
                count=len(pooled),
                round_medians_us=[us(median(part)) for part in per_round],
            )
        floor = by_name["floor"]
        for row in by_name.values():
            if row.contender == "hop":
                continue
            row.ratio = row.median_us / floor.median_us
            row.round_ratios = [
                a / b for a, b in zip(row.round_medians_us, floor.round_medians_us, strict=True)
            ]
            if "floor_async" in by_name and row.contender.endswith("async"):
                row.ratio_async_floor = row.median_us / by_name["floor_async"].median_us
        sync_row = by_name["port_sync"]
        sync_row.target = SYNC_TARGETS[vendor].get(op)
        if sync_row.target is not None and sync_row.ratio is not None:
            sync_row.passed = sync_row.ratio <= sync_row.target
        hop = by_name["hop"]
        async_row = by_name["port_async"]
        limit = sync_row.median_us + HOP_NOISE * hop.median_us
        async_row.passed = async_row.median_us <= limit
        io_hop = by_name["floor_hop"].median_us - floor.median_us
        async_checks.append(
            {
                "op": op,
                "port_sync_median_us": sync_row.median_us,
                "port_async_median_us": async_row.median_us,
                "async_minus_sync_us": async_row.median_us - sync_row.median_us,
                "hop_median_us": hop.median_us,
                "hop_p95_us": hop.p95_us,
                "limit_us": limit,
                "passed": async_row.passed,
                "hop_around_io_us": io_hop,
                "async_minus_sync_minus_io_hop_us": async_row.median_us - sync_row.median_us - io_hop,
            }
        )
        order = ["floor", "port_sync", "floor_hop", "floor_async", "port_async"]
        rows.extend(by_name[name] for name in order if name in by_name and name != "hop")
    return rows, async_checks


def render(header: str, rows: list[Row], async_checks: list[dict[str, Any]], vendor: str) -> str:
    out = io.StringIO()
    w = out.write
    has_async_floor = any(r.contender == "floor_async" for r in rows)
    w(header + "\n\n")
    cols = (
        f"{'operation':<22} {'contender':<20} {'median':>8} {'p95':>8} {'x floor':>8} {'rounds x floor':>15}"
    )
    if has_async_floor:
        cols += f" {'x async floor':>13}"
    cols += f" {'target':>8} {'result':>6}"
    w(cols + "\n")
    w("-" * len(cols) + "\n")
    last_op = ""
    for r in rows:
        op_cell = OP_TITLES[r.op] if r.op != last_op else ""
        last_op = r.op
        ratio = f"{r.ratio:.2f}x" if r.ratio is not None else ""
        spread = (
            f"{min(r.round_ratios):.2f}-{max(r.round_ratios):.2f}"
            if r.round_ratios and r.contender != "floor"
            else ""
        )
        line = f"{op_cell:<22} {r.label:<20} {r.median_us:>8.1f} {r.p95_us:>8.1f} {ratio:>8} {spread:>15}"
        if has_async_floor:
            line += f" {(f'{r.ratio_async_floor:.2f}x' if r.ratio_async_floor else ''):>13}"
        if r.contender == "port_sync":
            target = f"<={r.target:.2f}x" if r.target is not None else "-"
            result = "" if r.passed is None else ("PASS" if r.passed else "MISS")
        elif r.contender == "port_async":
            target = "sync+hop"
            result = "PASS" if r.passed else "MISS"
        else:
            target, result = "", ""
        w(f"{line} {target:>8} {result:>6}\n")
    w("\nasync API vs sync twin (limit: sync median + " + f"{HOP_NOISE:.2f} x no-op hop median)\n\n")
    cols = (
        f"{'operation':<22} {'port sync':>10} {'port async':>10} {'async-sync':>10} "
        f"{'no-op hop':>10} {'hop p95':>8} {'limit':>8} {'result':>6} {'io hop':>8}"
    )
    w(cols + "\n")
    w("-" * len(cols) + "\n")
    for a in async_checks:
        w(
            f"{OP_TITLES[a['op']]:<22} {a['port_sync_median_us']:>10.1f} {a['port_async_median_us']:>10.1f} "
            f"{a['async_minus_sync_us']:>10.1f} {a['hop_median_us']:>10.1f} {a['hop_p95_us']:>8.1f} "
            f"{a['limit_us']:>8.1f} {('PASS' if a['passed'] else 'MISS'):>6} {a['hop_around_io_us']:>8.1f}\n"
        )
    w("\nTimes in microseconds per operation; 'x floor' = median / sync floor median, same operation;\n")
    w("'rounds x floor' = range of the per-round median ratios. Claim has no target.\n")
    w("'io hop' = (floor via hop) - (floor) median: one sync_to_async hop around the real statement.\n")
    return out.getvalue()


# -- environment --------------------------------------------------------------------------------------


def port_prepared_statements(loop: asyncio.AbstractEventLoop) -> dict[str, int]:
    """How many of the port's statements each Django connection has prepared server-side."""
    from asgiref.sync import sync_to_async
    from django.db import connection

    def count() -> int:
        with connection.cursor() as cur:
            cur.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s", [f"%{TABLE}%"])
            row = cur.fetchone()
        return int(row[0]) if row else 0

    in_executor = loop.run_until_complete(sync_to_async(count, thread_sensitive=True)())
    return {"port_sync_connection": count(), "port_async_connection": in_executor}


def environment(target: Target, admin: Admin, args: argparse.Namespace) -> dict[str, Any]:
    from turnstate_app.conf import conf

    env = common_environment(target, admin.server_version(), args)
    env["turnstate_max_value_bytes"] = conf.MAX_VALUE_BYTES
    return env


# -- profiling -----------------------------------------------------------------------------------------


def micro(fn: Callable[[], object], loops: int = 20000) -> float:
    """Median over 5 batches of the per-call cost of ``fn`` in microseconds."""
    batches = []
    for _ in range(5):
        start = time.perf_counter_ns()
        for _ in range(loops):
            fn()
        batches.append((time.perf_counter_ns() - start) / loops)
    return us(median(batches))


def profile_port(port: Any, admin: Admin, n: int, values: list[str]) -> str:
    """cProfile of the port's sync path per operation, plus a per-step cost breakdown."""
    from django.db import connections, router
    from django.utils import timezone

    from turnstate_app.conf import conf
    from turnstate_app.models import CheckpointMetadata
    from turnstate_app.ports.limits import require_row_ids, require_write
    from turnstate_app.ports.statements import statements_for

    out = io.StringIO()
    contender = port_sync(port)
    assert contender.sync_ops is not None
    for op in ("upsert_new", "read_hit"):
        admin.truncate()
        if op in SEEDED_OPS:
            admin.seed(make_items("port_sync", "seed", "profile", n, values))
        items = make_items("port_sync", op, "profile", n, values)
        fn = contender.sync_ops[op]
        profiler = cProfile.Profile()
        profiler.enable()
        for t, c, k, v in items:
            fn(t, c, k, v)
        profiler.disable()
        stats = pstats.Stats(profiler, stream=out)
        out.write(f"\n== cProfile, port sync {op}, {n} calls, sorted by tottime ==\n")
        stats.sort_stats("tottime").print_stats(18)

    connection = connections["default"]
    value = values[0]
    stamp = timezone.now()
    steps: list[tuple[str, Callable[[], object]]] = [
        ("router.db_for_write(model)", lambda: router.db_for_write(CheckpointMetadata)),
        ("connections[alias]", lambda: connections["default"]),
        ("require_row_ids (read)", lambda: require_row_ids("t", "c", "k", vendor=connection.vendor)),
        (
            "require_write (+ conf.MAX_VALUE_BYTES)",
            lambda: require_write(
                "t", "c", "k", value, TASK_ID, vendor=connection.vendor, max_bytes=conf.MAX_VALUE_BYTES
            ),
        ),
        ("conf.MAX_VALUE_BYTES", lambda: conf.MAX_VALUE_BYTES),
        ("timezone.now()", timezone.now),
        ("ops.adapt_datetimefield_value", lambda: connection.ops.adapt_datetimefield_value(stamp)),
        ("statements_for(alias)", lambda: statements_for("default")),
        ("connection.in_atomic_block", lambda: connection.in_atomic_block),
    ]
    out.write("\n== per-step cost of the port's Python work (us per call, median of 5 batches) ==\n")
    for name, fn_step in steps:
        out.write(f"{name:<36} {micro(fn_step):8.2f}\n")
    return out.getvalue()


# -- main ------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    target = make_target(args.database, args.prepare_threshold)
    if target.vendor == "postgresql":
        ensure_postgres_database(target.conninfo)
    configure_django(target)
    check_statements(target.vendor)

    from django.db import connections

    from turnstate_app.ports import ModelCheckpointCommandPort

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    admin = Admin(target)
    if (foreign := admin.foreign_rows()) and not args.force:
        raise SystemExit(
            f"{TABLE} holds {foreign} rows the bench did not write and it truncates the table: "
            "point --database at a bench database (e.g. .../turnstate_bench) or pass --force"
        )
    port = ModelCheckpointCommandPort()
    if target.vendor == "postgresql":
        contenders = [
            psycopg_floor(target.conninfo),
            port_sync(port),
            via_hop(psycopg_floor(target.conninfo)),
            psycopg_async_floor(target.conninfo, loop),
            port_async(port),
            noop_hop(),
        ]
    else:
        contenders = [
            sqlite_floor(target.sqlite_path),
            port_sync(port),
            via_hop(sqlite_floor(target.sqlite_path, check_same_thread=False)),
            port_async(port),
            noop_hop(),
        ]
    env = environment(target, admin, args)
    values = make_values(args.value_bytes)

    print(
        f"{env['database_server'].split(' on ')[0]} | Django {env['django']} | "
        f"psycopg {env.get('psycopg')} | "
        f"{env['cpu_count']} CPUs | n={args.n} x {args.repeat} rounds (+1 warm-up) | "
        f"value {args.value_bytes} B",
        flush=True,
    )
    # Warm-up: opens every connection (the async port's lives in the sync_to_async thread),
    # prepares statements and fills caches. Its samples are discarded.
    for op in OPS:
        run_phase(op, 0, "warmup", min(args.n, 200), args.chunk, contenders, admin, loop, values)
    if target.vendor == "postgresql":
        env["port_prepared_statements_after_warmup"] = port_prepared_statements(loop)
        if not any(env["port_prepared_statements_after_warmup"].values()):
            print(
                "note: the port's statements are NOT prepared on the server "
                f"(Django's prepare_threshold is {env['django_connection_prepare_threshold']!r}; "
                "psycopg ignores prepare=True when it is None)",
                flush=True,
            )
    gc.collect()
    gc.freeze()

    rounds: list[dict[str, dict[str, list[int]]]] = []
    started = time.monotonic()
    for r in range(args.repeat):
        per_op = {}
        for op in OPS:
            per_op[op] = run_phase(op, r, f"{r:03d}", args.n, args.chunk, contenders, admin, loop, values)
        rounds.append(per_op)
        print(f"round {r + 1}/{args.repeat} done ({time.monotonic() - started:.0f}s)", flush=True)
    env["loadavg_end"] = list(os.getloadavg())
    env["duration_s"] = round(time.monotonic() - started, 1)

    rows, async_checks = summarize(target.vendor, contenders, rounds)
    title = "PostgreSQL" if target.vendor == "postgresql" else "SQLite"
    header = (
        f"{title} ({env['database_server'].split(' on ')[0]}), n={args.n} ops x {args.repeat} rounds per "
        f"contender and operation, value {args.value_bytes} B, times in us"
    )
    table = render(header, rows, async_checks, target.vendor)
    print()
    print(table)

    profile_text = None
    if args.profile:
        profile_text = profile_port(port, admin, args.n, values)
        print(profile_text)

    hop_rounds = [x for rd in rounds for op in OPS for x in rd[op]["hop"]]
    result: dict[str, Any] = {
        "environment": env,
        "targets": {"sync": SYNC_TARGETS[target.vendor], "async_hop_noise": HOP_NOISE},
        "rows": [vars(r) for r in rows],
        "async_vs_sync": async_checks,
        "noop_hop": {"median_us": us(median(hop_rounds)), "p95_us": us(percentile(hop_rounds, 95))},
        "table": table,
        "profile": profile_text,
        "sql": {"read": SQL_READ, "write": SQL_WRITE, "claim": SQL_CLAIM},
    }
    suffix = "" if args.prepare_threshold is None else f"-prepare{args.prepare_threshold}"
    output = args.output or BENCH_DIR / "results" / f"port-{target.vendor}{suffix}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {output}")

    for c in contenders:
        for close in c.closers:
            close()
    from asgiref.sync import sync_to_async

    loop.run_until_complete(sync_to_async(connections.close_all, thread_sensitive=True)())
    connections.close_all()
    admin.truncate()
    admin.close()
    loop.close()
    if target.tmpdir:
        shutil.rmtree(target.tmpdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
