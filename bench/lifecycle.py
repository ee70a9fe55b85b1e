#!/usr/bin/env python
"""``mint_pause`` and ``resume_pause``: latency as a multiple of one port upsert, and statement counts.

Minting writes the request, the turn state and the ledger row and signs a token; resuming checks
the token, the ledger and the stored turn, then consumes the pause in one transaction and stores
the answer. Each is measured beside one ``write_metadata_sync`` upsert (the unit) and the raw
driver running the port's upsert (the floor), interleaved in the same run, so the multiples hold
on a noisy machine. Statement counts come from ``CaptureQueriesContext`` (data statements: no
BEGIN, COMMIT, SAVEPOINT or RELEASE) and, on PostgreSQL, from libpq's protocol trace.

A benchmark, not a test: it prints a table, writes ``bench/results/lifecycle-<vendor>.json`` and
exits 0. Run it from the repository root::

    .venv/bin/python bench/lifecycle.py --database sqlite
    .venv/bin/python bench/lifecycle.py --database postgres://postgres@127.0.0.1:5432/turnstate_bench_lc
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import shutil
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.common import (  # noqa: E402 - needs the repository root on sys.path
    RESULTS_DIR,
    SQL_WRITE,
    Target,
    check_statements,
    configure_django,
    ensure_postgres_database,
    environment,
    finish_environment,
    make_target,
    make_transcript,
    make_values,
    median,
    pg_protocol_counts,
    qmark,
    rotation,
    server_version,
    sqlite_connect,
    summary_us,
    timed_sync,
    us,
    write_json,
)

DEFAULT_PG_URL = "postgres://postgres@127.0.0.1:5432/turnstate_bench_lc"
TABLES = ("turnstate_app_checkpointmetadata", "turnstate_app_pause")
OPS = ("floor", "upsert", "mint", "resume")
LABELS = {
    "floor": "floor upsert (raw driver)",
    "upsert": "port upsert (the unit)",
    "mint": "mint_pause",
    "resume": "resume_pause",
}
TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")
REQUEST = {"question": "Which date suits you for the flight?", "options": ["Monday", "Tuesday"]}
ANSWER = {"choice": "Monday"}


# -- the operations -----------------------------------------------------------------------------------


@dataclass
class Bench:
    """Everything the timed calls need, built once."""

    target: Target
    prompt: str
    messages: list[dict[str, Any]]
    values: list[str]
    floor_call: Callable[[str, str], object]
    tokens: deque[str]
    counter: int = 0

    def next_id(self) -> int:
        self.counter += 1
        return self.counter


def make_floor(target: Target) -> tuple[Callable[[str, str], object], Callable[[], None], Any]:
    """The port's upsert on a raw connection of its own: what one statement costs with nothing around it."""
    if target.vendor == "postgresql":
        import psycopg

        conn = psycopg.connect(target.conninfo, autocommit=True)
        cur = conn.cursor()

        def pg_upsert(key: str, value: str) -> None:
            now = datetime.now(UTC)
            cur.execute(SQL_WRITE, ("bench-floor", "cp", key, value, "bench-task", now, now), prepare=True)

        return pg_upsert, conn.close, conn
    lite = sqlite_connect(target.sqlite_path)
    lite_cur = lite.cursor()
    sql = qmark(SQL_WRITE)

    def sqlite_upsert(key: str, value: str) -> None:
        now = str(datetime.now(UTC).replace(tzinfo=None))
        lite_cur.execute(sql, ("bench-floor", "cp", key, value, "bench-task", now, now))

    return sqlite_upsert, lite.close, lite


def op_floor(bench: Bench) -> Callable[[], object]:
    i = bench.next_id()
    key, value = f"floor:{i:07d}", bench.values[i % len(bench.values)]
    return lambda: bench.floor_call(key, value)


def op_upsert(bench: Bench) -> Callable[[], object]:
    from turnstate_app.ports import get_default_store

    port = get_default_store().commands
    assert port is not None
    i = bench.next_id()
    key, value = f"upsert:{i:07d}", bench.values[i % len(bench.values)]
    return lambda: port.write_metadata_sync(  # type: ignore[attr-defined]
        thread_id="bench-upsert", checkpoint_id="cp", key=key, value=value, task_id="bench-task"
    )


def mint(bench: Bench) -> Any:
    from turnstate_app.pauses import mint_pause

    i = bench.next_id()
    return mint_pause(
        run_id=f"run-{i:07d}",
        session_id="session-000001",
        thread_id=f"bench-thread-{i:07d}",
        checkpoint_id=f"cp-{i:07d}",
        scope_hash="scope-" + "a" * 32,
        tool_call_id=f"call-{i:07d}",
        name="ask_user",
        request=REQUEST,
        prompt=bench.prompt,
        messages=bench.messages,
    )


def op_mint(bench: Bench) -> Callable[[], object]:
    def call() -> None:
        minted = mint(bench)
        if not minted.resumable:
            raise SystemExit("mint_pause recorded no turn state: the store is not wired to the model port")
        bench.tokens.append(minted.token)

    return call


def op_resume(bench: Bench) -> Callable[[], object]:
    from turnstate_app.pauses import resume_pause

    token = bench.tokens.popleft()

    def call() -> None:
        resumed = resume_pause(token, ANSWER)
        if resumed.checkpoint is None or resumed.checkpoint.messages != bench.messages:
            raise SystemExit("resume_pause did not give back the recorded turn")

    return call


BUILDERS: dict[str, Callable[[Bench], Callable[[], object]]] = {
    "floor": op_floor,
    "upsert": op_upsert,
    "mint": op_mint,
    "resume": op_resume,
}


def run_round(bench: Bench, round_no: int, n: int, chunk: int) -> dict[str, list[int]]:
    """Each operation n times, taking turns in chunks; resume consumes tokens minted earlier."""
    truncate(bench.target)
    bench.tokens.clear()
    for _ in range(chunk):  # a stock of tokens so resume can take its turn before mint's first chunk
        op_mint(bench)()
    samples: dict[str, list[int]] = {op: [] for op in OPS}
    for j, _ in enumerate(range(0, n, chunk)):
        for op in rotation(OPS, j, round_no):
            calls = [(BUILDERS[op](bench),) for _ in range(chunk)]
            got, _results = timed_sync(lambda call: call(), calls)
            samples[op].extend(got)
    return samples


def truncate(target: Target) -> None:
    from django.db import connection

    with connection.cursor() as cur:
        if target.vendor == "postgresql":
            cur.execute("TRUNCATE " + ", ".join(f'"{t}"' for t in TABLES))
        else:
            for table in TABLES:
                cur.execute(f'DELETE FROM "{table}"')
    if target.vendor == "postgresql":
        with connection.cursor() as cur:
            for table in TABLES:
                cur.execute(f'ANALYZE "{table}"')


# -- statement counts and profile ---------------------------------------------------------------------


def statement_counts(bench: Bench) -> dict[str, Any]:
    """The statements one warm call of each operation sends, as Django logs them (and, on PG, libpq)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    out: dict[str, Any] = {}
    for op in ("upsert", "mint", "resume"):
        call = BUILDERS[op](bench)
        with CaptureQueriesContext(connection) as ctx:
            call()
        logged = [q["sql"] for q in ctx.captured_queries]
        data = [sql for sql in logged if not sql.lstrip().upper().startswith(TRANSACTION_CONTROL)]
        out[op] = {"data_statements": len(data), "logged": len(logged), "sql": logged}
        if bench.target.vendor == "postgresql":
            connection.ensure_connection()
            out[op]["protocol"] = pg_protocol_counts(connection.connection.pgconn, BUILDERS[op](bench))
    return out


def profile(bench: Bench, n: int) -> str:
    """cProfile of n mints and n resumes: where the time beyond the statements goes."""
    out = io.StringIO()
    for op in ("mint", "resume"):
        if op == "mint":
            calls = [BUILDERS[op](bench) for _ in range(n)]
        else:
            for _ in range(n):
                op_mint(bench)()
            calls = [BUILDERS[op](bench) for _ in range(n)]
        profiler = cProfile.Profile()
        profiler.enable()
        for call in calls:
            call()
        profiler.disable()
        out.write(f"\n== cProfile, {n} x {op}, sorted by cumulative time ==\n")
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(25)
    return out.getvalue()


# -- report -------------------------------------------------------------------------------------------


def render(
    title: str, samples: dict[str, list[int]], rounds: list[dict[str, list[int]]], counts: dict[str, Any]
) -> tuple[str, list[dict[str, Any]]]:
    unit = median(samples["upsert"])
    unit_rounds = [median(r["upsert"]) for r in rounds]
    rows: list[dict[str, Any]] = []
    out = io.StringIO()
    has_protocol = "protocol" in counts["upsert"]
    cols = (
        f"{'operation':<27} {'median':>9} {'p95':>9} {'x upsert':>9} {'rounds x upsert':>16} "
        f"{'data stmts':>10} {'logged':>6}"
    )
    if has_protocol:
        cols += f" {'wire stmts':>10} {'round trips':>11}"
    out.write(title + "\n\n" + cols + "\n" + "-" * len(cols) + "\n")
    for op in OPS:
        stats = summary_us(samples[op])
        per_round = [median(r[op]) / u for r, u in zip(rounds, unit_rounds, strict=True)]
        row: dict[str, Any] = {
            "op": op,
            **stats,
            "x_upsert": stats["median_us"] / us(unit),
            "round_x_upsert": per_round,
        }
        line = (
            f"{LABELS[op]:<27} {stats['median_us']:>9.1f} {stats['p95_us']:>9.1f} {row['x_upsert']:>8.2f}x "
            f"{min(per_round):>7.2f}-{max(per_round):<8.2f}"
        )
        c = counts.get(op)
        if c is not None:
            row["data_statements"], row["logged_statements"] = c["data_statements"], c["logged"]
            line += f" {c['data_statements']:>10} {c['logged']:>6}"
            if has_protocol:
                p = c["protocol"]
                row["protocol"] = p
                line += f" {p['statements']:>10} {p['round_trips']:>11}"
        rows.append(row)
        out.write(line + "\n")
    out.write(
        "\nTimes in us per call. 'x upsert' = median / the port upsert's median in the same run;\n"
        "'rounds x upsert' = range of the per-round ratios. data stmts = CaptureQueriesContext without\n"
        "BEGIN/COMMIT/SAVEPOINT/RELEASE; logged = all it captured"
    )
    out.write(
        "; wire stmts and round trips = libpq's protocol trace\n(BEGIN and COMMIT included).\n"
        if has_protocol
        else ".\n"
    )
    return out.getvalue(), rows


# -- main ---------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument(
        "--database", required=True, help=f"'sqlite' or a postgres:// URL (e.g. {DEFAULT_PG_URL})"
    )
    parser.add_argument("--n", type=int, default=500, help="calls per operation per round")
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds, after one warm-up round")
    parser.add_argument("--chunk", type=int, default=50, help="calls an operation makes before the next one")
    parser.add_argument(
        "--value-bytes", type=int, default=2048, help="size of the transcript and of the upsert"
    )
    parser.add_argument("--profile", action="store_true", help="afterwards, cProfile mint and resume")
    parser.add_argument(
        "--force", action="store_true", help="empty the tables even if others' rows are there"
    )
    parser.add_argument("--output", type=Path, default=None, help="JSON path (default bench/results/...)")
    args = parser.parse_args(argv)
    if min(args.n, args.repeat, args.chunk, args.value_bytes) < 1:
        parser.error("--n, --repeat, --chunk and --value-bytes must be positive")
    return args


def foreign_rows() -> int:
    """Rows this bench did not write: its threads all start with ``bench-``."""
    from django.db import connection

    with connection.cursor() as cur:
        total = 0
        for table in TABLES:
            cur.execute(f"SELECT count(*) FROM \"{table}\" WHERE thread_id NOT LIKE 'bench-%%'")
            row = cur.fetchone()
            total += int(row[0]) if row else 0
    return total


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    target = make_target(args.database)
    if target.vendor == "postgresql":
        ensure_postgres_database(target.conninfo)
    configure_django(target)
    check_statements(target.vendor)
    if (foreign := foreign_rows()) and not args.force:
        raise SystemExit(
            f"the tables hold {foreign} rows the bench did not write and it empties them: point --database "
            "at a database of its own (e.g. .../turnstate_bench_lc) or pass --force"
        )
    floor_call, floor_close, _ = make_floor(target)
    prompt, messages = make_transcript(args.value_bytes)
    bench = Bench(target, prompt, messages, make_values(args.value_bytes), floor_call, deque())
    env = environment(target, server_version(target), args)
    started = time.monotonic()
    print(
        f"{env['database_server'].split(' on ')[0]} | Django {env['django']} | {env['cpu_count']} CPUs | "
        f"n={args.n} x {args.repeat} rounds | transcript and value {args.value_bytes} B",
        flush=True,
    )

    run_round(bench, 0, min(args.n, 100), min(args.chunk, 50))  # warm-up: connections, caches
    gc.collect()
    gc.freeze()
    rounds = []
    for r in range(args.repeat):
        rounds.append(run_round(bench, r, args.n, args.chunk))
        print(f"round {r + 1}/{args.repeat} done ({time.monotonic() - started:.0f}s)", flush=True)
    samples = {op: [x for rd in rounds for x in rd[op]] for op in OPS}
    counts = statement_counts(bench)
    finish_environment(env, started)

    title = (
        f"{'PostgreSQL' if target.vendor == 'postgresql' else 'SQLite'} "
        f"({env['database_server'].split(' on ')[0]}), n={args.n} x {args.repeat} rounds per operation, "
        f"transcript {args.value_bytes} B"
    )
    table, rows = render(title, samples, rounds, counts)
    print("\n" + table)
    profile_text = profile(bench, min(args.n, 200)) if args.profile else None
    if profile_text:
        print(profile_text)

    write_json(
        args.output or RESULTS_DIR / f"lifecycle-{target.vendor}.json",
        {
            "environment": env,
            "rows": rows,
            "statements": counts,
            "table": table,
            "profile": profile_text,
        },
    )
    floor_close()
    truncate(target)
    from django.db import connections

    connections.close_all()
    if target.tmpdir:
        shutil.rmtree(target.tmpdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
