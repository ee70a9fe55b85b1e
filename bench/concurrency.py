#!/usr/bin/env python
"""Concurrent upserts from many processes: the port's sync twin against the raw driver doing the same.

8 processes (``multiprocessing`` spawn, each with its own connections: a psycopg one for the
floor, Django's for the port) run 500 upserts each, first on the same 50 keys (every write
contends for a row lock with the others), then on fresh keys (every write inserts). The
processes start once and run every round, each round starting at a shared barrier; rounds of
the two contenders alternate, so drift falls on both. Reported: throughput as a ratio to the
floor's, errors, and the final row count, which must be exact (50, or processes x ops).
Targets: >= 0.8x the floor, 0 errors, exact count.

The floor runs the port's own upsert (``statements_for("default").write``, every column the port
writes, a constant in place of the MAC) on a prepared psycopg statement. By default Django runs
with its default ``OPTIONS`` (each value bound into the SQL text, planned on every run);
``--recommended-options`` gives Django the PostgreSQL ``OPTIONS`` the documentation recommends
(``server_side_binding``, ``prepare_threshold`` 5), so both sides run a prepared statement and
differ only in what the port does around it. ``--profile`` breaks one process's client CPU per
upsert down: the statement on Django's cursor, the row's MAC, the rest of the port.

A benchmark, not a test: it prints a table, writes ``bench/results/concurrency-postgresql.json``
and exits 0. Run it from the repository root::

    .venv/bin/python bench/concurrency.py --database postgres://postgres@127.0.0.1:5432/turnstate_bench_cc
"""

from __future__ import annotations

import argparse
import io
import multiprocessing as mp
import random
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.common import (  # noqa: E402 - needs the repository root on sys.path
    RESULTS_DIR,
    TABLE,
    Target,
    configure_django,
    ensure_postgres_database,
    environment,
    finish_environment,
    make_target,
    make_values,
    median,
    percentile,
    server_version,
    us,
    write_json,
)

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/turnstate_bench_cc"
MODES = ("same_keys", "fresh_keys")
MODE_TITLES = {"same_keys": "same 50 keys", "fresh_keys": "fresh keys"}
CONTENDERS = ("floor", "port")
LABELS = {"floor": "floor psycopg", "port": "port write_metadata_sync"}
RATIO_TARGET = 0.8
WARMUP_OPS = 20
FLOOR_MAC = "0" * 64
"""What the floor writes in the MAC column: the same statement and columns, no MAC computed."""


def port_write_sql() -> str:
    """The port's own upsert, exactly as it sends it (``%s`` placeholders, as psycopg takes them):
    the floor runs this statement, so the two differ only in what happens around it."""
    from turnstate_app.ports.statements import statements_for

    return statements_for("default").write


@dataclass
class Setup:
    """What a worker process needs to open its connections; picklable, so spawn can hand it over."""

    worker: int
    value_bytes: int
    django_db: dict[str, Any]
    conninfo: str


@dataclass
class Job:
    """One round for one worker: which contender upserts, on which keys."""

    contender: str
    mode: str
    ops: int
    keys: int
    thread_id: str


@dataclass
class WorkerResult:
    worker: int
    start_ns: int = 0
    end_ns: int = 0
    samples: list[int] = field(default_factory=list)
    cpu_ns: int = 0  # this process's CPU time over the timed upserts
    errors: int = 0
    error_messages: list[str] = field(default_factory=list)
    fatal: bool = False


# -- the worker (runs in a spawned process) -----------------------------------------------------------


def key_order(job: Job, worker: int) -> list[str]:
    """Same keys: each worker walks the shared keys in its own shuffled order. Fresh: its own keys."""
    if job.mode == "fresh_keys":
        return [f"w{worker:02d}:{i:05d}" for i in range(job.ops)]
    rng = random.Random(worker)
    order: list[str] = []
    while len(order) < job.ops:
        batch = [f"k:{i:03d}" for i in range(job.keys)]
        rng.shuffle(batch)
        order.extend(batch)
    return order[: job.ops]


def make_upserts(setup: Setup) -> dict[str, Callable[[str, str, str], None]]:
    """One upsert per contender: the port's sync twin (Django's connection) and bare psycopg (its own)."""
    import psycopg

    configure_django(Target("postgresql", setup.django_db), migrate=False)
    from turnstate_app.ports import ModelCheckpointCommandPort

    port = ModelCheckpointCommandPort()
    sql = port_write_sql()
    conn = psycopg.connect(setup.conninfo, autocommit=True)
    cur = conn.cursor()

    def port_upsert(thread_id: str, key: str, value: str) -> None:
        port.write_metadata_sync(
            thread_id=thread_id, checkpoint_id="cp", key=key, value=value, task_id="bench-task"
        )

    def floor_upsert(thread_id: str, key: str, value: str) -> None:
        now = datetime.now(UTC)
        cur.execute(sql, (thread_id, "cp", key, value, None, FLOOR_MAC, "bench-task", now, now), prepare=True)

    return {"port": port_upsert, "floor": floor_upsert}


def worker_main(setup: Setup, barrier: Any, jobs: Any, results: Any) -> None:
    """Open and warm up both contenders' connections once, then run each round it is handed.

    Every round starts at a barrier shared by all workers, so all processes upsert at once.
    """
    try:
        upserts = make_upserts(setup)
        values = make_values(setup.value_bytes)
        for name, upsert in upserts.items():  # opens the connection, prepares the statement
            for i in range(WARMUP_OPS):
                upsert("bench-cc-warmup", f"{name}:{setup.worker}:{i}", values[0])
    except Exception:
        results.put(
            WorkerResult(setup.worker, errors=1, error_messages=[traceback.format_exc(limit=5)], fatal=True)
        )
        barrier.abort()
        return
    clock = time.perf_counter_ns  # CLOCK_MONOTONIC: comparable across processes on Linux
    while (job := jobs.get()) is not None:
        out = WorkerResult(setup.worker)
        upsert = upserts[job.contender]
        keys = key_order(job, setup.worker)
        try:
            barrier.wait()
        except Exception:
            out.fatal, out.errors = True, 1
            out.error_messages.append(traceback.format_exc(limit=2))
            results.put(out)
            return
        cpu_start = time.process_time_ns()
        out.start_ns = clock()
        for i, key in enumerate(keys):
            start = clock()
            try:
                upsert(job.thread_id, key, values[(i + setup.worker) % len(values)])
            except Exception as exc:  # counted and reported: the target is zero
                out.errors += 1
                if len(out.error_messages) < 3:
                    out.error_messages.append(f"{type(exc).__name__}: {exc}")
            out.samples.append(clock() - start)
        out.end_ns = clock()
        out.cpu_ns = time.process_time_ns() - cpu_start
        results.put(out)


# -- the parent ---------------------------------------------------------------------------------------


@dataclass
class RoundResult:
    contender: str
    mode: str
    repeat: int
    ops: int
    wall_s: float
    ops_per_s: float
    errors: int
    error_messages: list[str]
    rows: int
    expected_rows: int
    bad_values: int
    latency_median_us: float
    latency_p95_us: float
    client_cpu_us_per_op: float
    samples: list[int] = field(default_factory=list, repr=False)


class Admin:
    def __init__(self, conninfo: str) -> None:
        import psycopg

        self.conn = psycopg.connect(conninfo, autocommit=True)

    def foreign_rows(self) -> int:
        row = self.conn.execute(
            f"SELECT count(*) FROM \"{TABLE}\" WHERE thread_id NOT LIKE 'bench-%'"
        ).fetchone()
        return int(row[0]) if row else 0

    def truncate(self) -> None:
        self.conn.execute(f'TRUNCATE "{TABLE}"')

    def count(self, thread_id: str, values: list[str]) -> tuple[int, int]:
        """Rows the timed upserts left, and how many of them hold a value nobody wrote."""
        rows = self.conn.execute(
            f'SELECT "value" FROM "{TABLE}" WHERE thread_id = %s AND key NOT LIKE %s', (thread_id, "warmup:%")
        ).fetchall()
        allowed = set(values)
        return len(rows), sum(1 for (value,) in rows if value not in allowed)


@dataclass
class Pool:
    """The worker processes, started once and reused for every round."""

    processes: list[Any]
    barrier: Any  # held here: the children rebuild it by name, so it must outlive their start-up
    jobs: Any
    results: Any

    def collect(self) -> list[WorkerResult]:
        """One result per worker; a worker that died without one ends the run instead of hanging it."""
        import queue

        got: list[WorkerResult] = []
        deadline = time.monotonic() + 600
        while len(got) < len(self.processes):
            try:
                got.append(self.results.get(timeout=2))
            except queue.Empty:
                dead = [p.pid for p in self.processes if not p.is_alive()]
                if dead or time.monotonic() > deadline:
                    self.terminate()
                    raise SystemExit(
                        f"worker processes {dead or 'timed out'}: see their traceback above"
                    ) from None
        return got

    def terminate(self) -> None:
        for p in self.processes:
            if p.is_alive():
                p.terminate()

    def close(self) -> None:
        for _ in self.processes:
            self.jobs.put(None)
        for p in self.processes:
            p.join(timeout=30)


def start_pool(ctx: Any, target: Target, args: argparse.Namespace) -> Pool:
    barrier = ctx.Barrier(args.processes)
    jobs, results = ctx.Queue(), ctx.Queue()
    procs = [
        ctx.Process(
            target=worker_main,
            args=(Setup(w, args.value_bytes, target.django_db, target.conninfo), barrier, jobs, results),
        )
        for w in range(args.processes)
    ]
    for p in procs:
        p.start()
    return Pool(procs, barrier, jobs, results)


def run_round(
    pool: Pool, admin: Admin, contender: str, mode: str, repeat: int, args: argparse.Namespace
) -> RoundResult:
    admin.truncate()
    thread_id = f"bench-cc-{mode}-{contender}-{repeat}"
    for _ in pool.processes:
        pool.jobs.put(Job(contender, mode, args.ops, args.keys, thread_id))
    results = pool.collect()
    if fatal := [r for r in results if r.fatal]:
        pool.close()
        raise SystemExit("a worker failed:\n" + "\n".join(m for r in fatal for m in r.error_messages))
    total = sum(len(r.samples) for r in results)
    wall_s = (max(r.end_ns for r in results) - min(r.start_ns for r in results)) / 1e9
    samples = [x for r in results for x in r.samples]
    rows, bad = admin.count(thread_id, make_values(args.value_bytes))
    return RoundResult(
        contender=contender,
        mode=mode,
        repeat=repeat,
        ops=total,
        wall_s=wall_s,
        ops_per_s=total / wall_s,
        errors=sum(r.errors for r in results),
        error_messages=[m for r in results for m in r.error_messages][:5],
        rows=rows,
        expected_rows=args.keys if mode == "same_keys" else args.processes * args.ops,
        bad_values=bad,
        latency_median_us=us(median(samples)),
        latency_p95_us=us(percentile(samples, 95)),
        client_cpu_us_per_op=us(sum(r.cpu_ns for r in results) / total),
        samples=samples,
    )


def summarize(rounds: list[RoundResult], repeat: int) -> tuple[list[dict[str, Any]], str]:
    rows: list[dict[str, Any]] = []
    out = io.StringIO()
    cols = (
        f"{'keys':<13} {'contender':<25} {'ops/s':>8} {'x floor':>8} {'rounds x floor':>15} "
        f"{'median':>8} {'p95':>8} {'cpu/op':>7} {'errors':>6} {'rows':>11} {'result':>6}"
    )
    out.write(cols + "\n" + "-" * len(cols) + "\n")
    for mode in MODES:
        by: dict[str, list[RoundResult]] = {
            c: sorted((r for r in rounds if r.mode == mode and r.contender == c), key=lambda r: r.repeat)
            for c in CONTENDERS
        }
        floor_rate = median([r.ops_per_s for r in by["floor"]])
        for c in CONTENDERS:
            rs = by[c]
            rate = median([r.ops_per_s for r in rs])
            ratio = rate / floor_rate
            per_round = [a.ops_per_s / b.ops_per_s for a, b in zip(rs, by["floor"], strict=True)]
            pooled = [x for r in rs for x in r.samples]
            errors = sum(r.errors for r in rs)
            cpu = median([r.client_cpu_us_per_op for r in rs])
            exact = all(r.rows == r.expected_rows and r.bad_values == 0 for r in rs)
            row_counts = sorted({r.rows for r in rs})
            passed = None
            if c == "port":
                passed = (
                    ratio >= RATIO_TARGET
                    and errors == 0
                    and exact
                    and all(r.errors == 0 for r in by["floor"])
                )
            rows.append(
                {
                    "mode": mode,
                    "contender": c,
                    "ops_per_s_median": rate,
                    "ratio_to_floor": ratio,
                    "round_ratios": per_round,
                    "latency_median_us": us(median(pooled)),
                    "latency_p95_us": us(percentile(pooled, 95)),
                    "client_cpu_us_per_op": cpu,
                    "errors": errors,
                    "row_counts": row_counts,
                    "expected_rows": rs[0].expected_rows,
                    "exact": exact,
                    "passed": passed,
                }
            )
            spread = f"{min(per_round):.2f}-{max(per_round):.2f}" if c != "floor" else ""
            counts = "/".join(map(str, row_counts)) + ("" if exact else "!") + f" of {rs[0].expected_rows}"
            result = "" if passed is None else ("PASS" if passed else "MISS")
            mode_cell = MODE_TITLES[mode] if c == "floor" else ""
            out.write(
                f"{mode_cell:<13} {LABELS[c]:<25} {rate:>8.0f} {ratio:>7.2f}x "
                f"{spread:>15} {us(median(pooled)):>8.1f} {us(percentile(pooled, 95)):>8.1f} "
                f"{cpu:>7.1f} {errors:>6} {counts:>11} {result:>6}\n"
            )
    out.write(
        f"\nops/s = all processes' upserts / (last finish - first start), median of {repeat} rounds;\n"
        "'x floor' = that / the floor's; 'rounds x floor' = range over rounds run back to back;\n"
        "median and p95 = per-upsert latency in us, all processes pooled; cpu/op = the client processes'\n"
        "CPU time per upsert in us (the server shares the same cores); rows = final row count\n"
        "(every round; '!' marks a wrong count or value).\n"
        f"Target: >= {RATIO_TARGET}x floor, 0 errors, exact rows.\n"
    )
    return rows, out.getvalue()


def cpu_breakdown(target: Target, admin: Admin, value_bytes: int, n: int = 4000) -> str:
    """Where the port's extra client CPU per upsert goes, peeled layer by layer in one process.

    Each layer adds one piece of the port's path to the floor: ``run_statement`` (the
    statement on Django's cursor), then the row's MAC (``stored_row``: sealing, none for these
    keys, and the MAC), then the whole ``write_metadata_sync`` (routing, limits, settings,
    savepoint check). Layers alternate in chunks of 200; CPU time is ``process_time``.
    """
    import cProfile
    import pstats

    import psycopg
    from django.db import connections
    from django.utils import timezone

    from turnstate_app.ports import ModelCheckpointCommandPort
    from turnstate_app.ports.execution import run_statement
    from turnstate_app.ports.sealing import stored_row
    from turnstate_app.ports.statements import statements_for

    connection = connections["default"]
    port = ModelCheckpointCommandPort()
    port.write_metadata_sync(
        thread_id="bench-cc-cpu", checkpoint_id="cp", key="warm", value="v", task_id=None
    )
    statements = statements_for("default")
    conn = psycopg.connect(target.conninfo, autocommit=True)
    cur = conn.cursor()
    values = make_values(value_bytes)

    def floor(key: str, value: str) -> None:
        now = datetime.now(UTC)
        params = ("bench-cc-cpu", "cp", key, value, None, FLOOR_MAC, "bench-task", now, now)
        cur.execute(statements.write, params, prepare=True)

    def with_run_statement(key: str, value: str) -> None:
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        params = ("bench-cc-cpu", "cp", key, value, None, FLOOR_MAC, "bench-task", now, now)
        run_statement(connection, statements.write, params, first_row=False)

    def with_mac(key: str, value: str) -> None:
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        stored, key_id, mac = stored_row("bench-cc-cpu", "cp", key, value)
        params = ("bench-cc-cpu", "cp", key, stored, key_id, mac, "bench-task", now, now)
        run_statement(connection, statements.write, params, first_row=False)

    def whole_port(key: str, value: str) -> None:
        port.write_metadata_sync(
            thread_id="bench-cc-cpu", checkpoint_id="cp", key=key, value=value, task_id="bench-task"
        )

    layers: dict[str, Callable[[str, str], None]] = {
        "floor psycopg": floor,
        "+ run_statement": with_run_statement,
        "+ its MAC (stored_row)": with_mac,
        "port write_metadata_sync": whole_port,
    }
    cpu = dict.fromkeys(layers, 0)
    wall = dict.fromkeys(layers, 0)
    admin.truncate()
    for chunk in range(n // 200):
        for name in list(layers) if chunk % 2 else list(reversed(layers)):
            c0, w0 = time.process_time_ns(), time.perf_counter_ns()
            for i in range(200):
                layers[name](f"{name[:6]}:{chunk}:{i}", values[i % len(values)])
            cpu[name] += time.process_time_ns() - c0
            wall[name] += time.perf_counter_ns() - w0
    per = n // 200 * 200
    out = io.StringIO()
    out.write(f"client CPU per upsert, one process, {per} upserts per layer, interleaved\n\n")
    cols = f"{'layer':<38} {'cpu us/op':>9} {'wall us/op':>10}"
    out.write(cols + "\n" + "-" * len(cols) + "\n")
    for name in layers:
        out.write(f"{name:<38} {us(cpu[name] / per):>9.1f} {us(wall[name] / per):>10.1f}\n")
    profiler = cProfile.Profile()
    profiler.enable()
    for i in range(2000):
        whole_port(f"profile:{i}", values[i % len(values)])
    profiler.disable()
    out.write("\n== cProfile, 2000 x port write_metadata_sync, sorted by tottime ==\n")
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(18)
    conn.close()
    admin.truncate()
    return out.getvalue()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--database", default=DEFAULT_URL, help=f"a postgres:// URL (default {DEFAULT_URL})")
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--ops", type=int, default=500, help="upserts per process")
    parser.add_argument("--keys", type=int, default=50, help="shared keys in the same-keys phase")
    parser.add_argument("--value-bytes", type=int, default=2048)
    parser.add_argument("--repeat", type=int, default=15, help="rounds per mode and contender")
    parser.add_argument(
        "--force", action="store_true", help="truncate the table even if others' rows are there"
    )
    parser.add_argument(
        "--profile", action="store_true", help="afterwards, break the port's client CPU per upsert down"
    )
    parser.add_argument(
        "--profile-only", action="store_true", help="only the CPU breakdown (--profile), no timed rounds"
    )
    parser.add_argument(
        "--profile-upserts", type=int, default=4000, help="upserts per layer in the CPU breakdown"
    )
    parser.add_argument(
        "--recommended-options",
        action="store_true",
        help="connect Django with the documented PostgreSQL OPTIONS (server_side_binding,\n"
        "prepare_threshold 5), so the port's statement is prepared as the floor's is;\n"
        "without, Django's defaults (values bound into the SQL text, planned on every run)",
    )
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "concurrency-postgresql.json")
    args = parser.parse_args(argv)
    if (
        min(args.processes, args.ops, args.keys, args.value_bytes, args.repeat, args.profile_upserts // 200)
        < 1
    ):
        parser.error("every count must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.recommended_options:
        target = make_target(args.database, prepare_threshold=5, server_side_binding=True)
    else:
        target = make_target(args.database)
    if target.vendor != "postgresql":
        raise SystemExit("bench/concurrency.py measures PostgreSQL only")
    ensure_postgres_database(target.conninfo)
    configure_django(target)
    admin = Admin(target.conninfo)
    if (foreign := admin.foreign_rows()) and not args.force:
        raise SystemExit(
            f"{TABLE} holds {foreign} rows the bench did not write and it truncates the table: point "
            "--database at a database of its own (e.g. .../turnstate_bench_cc) or pass --force"
        )
    if args.profile_only:
        print(cpu_breakdown(target, admin, args.value_bytes, args.profile_upserts))
        admin.truncate()
        admin.conn.close()
        return 0
    env = environment(target, server_version(target), args)
    from django.db import connections

    connections.close_all()
    started = time.monotonic()
    print(
        f"{env['database_server'].split(' on ')[0]} | Django {env['django']} | psycopg {env['psycopg']} | "
        f"{env['cpu_count']} CPUs | {args.processes} processes x {args.ops} upserts, "
        f"value {args.value_bytes} B, {args.repeat} rounds, Django OPTIONS {target.django_db['OPTIONS']}",
        flush=True,
    )
    pool = start_pool(mp.get_context("spawn"), target, args)
    rounds: list[RoundResult] = []
    for r in range(args.repeat):
        for mode in MODES:
            # Alternate which contender goes first, so drift between rounds falls on both.
            order = CONTENDERS if r % 2 == 0 else tuple(reversed(CONTENDERS))
            for contender in order:
                result = run_round(pool, admin, contender, mode, r, args)
                rounds.append(result)
                print(
                    f"round {r + 1}/{args.repeat} {mode:<10} {contender:<5} {result.ops_per_s:8.0f} ops/s "
                    f"errors {result.errors} rows {result.rows}/{result.expected_rows} "
                    f"({time.monotonic() - started:.0f}s)",
                    flush=True,
                )
                for message in result.error_messages:
                    print(f"  error: {message}", flush=True)
    pool.close()
    finish_environment(env, started)
    rows, table = summarize(rounds, args.repeat)
    title = f"PostgreSQL, {args.processes} processes x {args.ops} upserts of {args.value_bytes} B\n\n"
    print("\n" + title + table)
    profile_text = (
        cpu_breakdown(target, admin, args.value_bytes, args.profile_upserts) if args.profile else None
    )
    if profile_text:
        print(profile_text)
    write_json(
        args.output,
        {
            "environment": env,
            "targets": {"ratio_to_floor": RATIO_TARGET, "errors": 0, "row_count": "exact"},
            "rows": rows,
            "rounds": [{k: v for k, v in asdict(r).items() if k != "samples"} for r in rounds],
            "table": title + table,
            "profile": profile_text,
            "sql": port_write_sql(),
        },
    )
    admin.truncate()
    admin.conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
