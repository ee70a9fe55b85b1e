#!/usr/bin/env python
"""Persisting and reloading a paused turn: this app's store beside LangGraph's Postgres checkpointer.

What LangGraph users run today to persist a paused turn is ``PostgresSaver.put`` (the state) plus
``put_writes`` (the interrupt), and ``get_tuple`` to resume; ours is
``TurnCheckpointStore.record_sync`` and ``load_sync`` (and the async ``record``/``load``). Both
run in the same process, on the same database, with the same transcripts, next to the raw
driver floor (the port's own statement through bare psycopg). The two sides do different work
per call (``bench/README.md`` says what), so this is reported, not gated.

A benchmark, not a test: it prints a table, writes ``bench/results/langgraph-postgresql.json``
and exits 0. Needs the ``bench`` extra. Run it from the repository root::

    .venv/bin/python bench/langgraph.py --database postgres://postgres@127.0.0.1:5432/turnstate_bench_lg
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import io
import os
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
# Run as a script, this file's directory heads sys.path and this file would shadow the very
# ``langgraph`` package it measures.
sys.path[:] = [p for p in sys.path if Path(p or os.curdir).resolve() != BENCH_DIR]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.common import (  # noqa: E402 - needs the repository root on sys.path
    FLOOR_MAC,
    RESULTS_DIR,
    SQL_READ,
    SQL_WRITE,
    TABLE,
    Target,
    check_statements,
    configure_django,
    ensure_postgres_database,
    environment,
    finish_environment,
    make_target,
    make_transcript,
    median,
    pg_protocol_counts,
    rotation,
    server_version,
    summary_us,
    timed_async,
    timed_sync,
    us,
    write_json,
)

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/turnstate_bench_lg"
LG_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
OPS = ("save", "load")
OP_TITLES = {"save": "save (pause)", "load": "load (resume)"}
VARIANTS = 4  # distinct transcripts per size, used in turn
REQUEST = {"question": "Which date suits you for the flight?", "options": ["Monday", "Tuesday"]}
LG_METADATA: Any = {"source": "loop", "step": 3, "parents": {}}
# The channel LangGraph's loop writes an interrupt to (``langgraph.constants.INTERRUPT``, now private).
INTERRUPT_CHANNEL = "__interrupt__"


# -- payloads ---------------------------------------------------------------------------------------


@dataclass
class Payload:
    """One value size: the transcripts, as our store and as LangGraph are handed them."""

    size: int
    templates: list[Any]  # TurnCheckpoint.model_construct(prompt=..., messages=...) per variant
    records: list[str]  # an encoded record of each variant: what the floor writes and reads back
    lg_checkpoints: list[Any]  # LangGraph Checkpoint per variant
    lg_versions: list[dict[str, Any]]  # its new_versions (every channel is new)


@dataclass
class Turn:
    """One paused turn, as each side addresses it: our claims, LangGraph's thread config."""

    variant: int
    claims: Any  # PauseClaims
    checkpoint: Any  # TurnCheckpoint (store contenders only)
    key: str  # turn_state:<jti>
    config: Any  # RunnableConfig
    writes: list[tuple[str, Any]]
    task_id: str


def make_payload(size: int) -> Payload:
    from langgraph.checkpoint.base import empty_checkpoint

    from turnstate_app.turnstate import TurnCheckpoint, stamped_turn

    templates, records, checkpoints, versions = [], [], [], []
    for v in range(VARIANTS):
        prompt, messages = make_transcript(size, v)
        template = TurnCheckpoint.model_construct(prompt=prompt, messages=messages)
        templates.append(template)
        records.append(stamped_turn(template, make_claims("floor", "template", v)).encode())
        cp = empty_checkpoint()
        cp["channel_values"] = {"messages": messages, "prompt": prompt}
        cp["channel_versions"] = {"messages": f"{1:032}.0.{v}", "prompt": f"{1:032}.0.{v}"}
        checkpoints.append(dict(cp))
        versions.append(dict(cp["channel_versions"]))
    return Payload(size, templates, records, checkpoints, versions)


def make_claims(contender: str, round_label: str, i: int) -> Any:
    from turnstate_app.contracts import PauseClaims

    return PauseClaims(
        jti=f"{contender}-{round_label}-{i:06d}",
        run_id=f"run-{i:06d}",
        session_id="session-000001",
        thread_id=f"bench-lg-{contender}-{round_label}-{i:06d}",
        checkpoint_id=f"cp-{i:06d}",
        scope_hash="scope-" + "a" * 32,
        tool_call_id=f"call-{i:06d}",
        name="ask_user",
    )


def make_turns(contender: Contender, round_label: str, n: int, payload: Payload) -> list[Turn]:
    from langgraph.types import Interrupt

    from turnstate_app.turnstate import stamped_turn, turn_state_key

    turns = []
    for i in range(n):
        v = i % VARIANTS
        claims = make_claims(contender.name, round_label, i)
        turns.append(
            Turn(
                variant=v,
                claims=claims,
                checkpoint=stamped_turn(payload.templates[v], claims) if contender.side == "store" else None,
                key=turn_state_key(claims),
                config={"configurable": {"thread_id": claims.thread_id, "checkpoint_ns": ""}},
                writes=[(INTERRUPT_CHANNEL, [Interrupt(value=REQUEST, id=f"interrupt-{i:06d}")])],
                task_id=f"task-{i:06d}",
            )
        )
    return turns


# -- contenders -------------------------------------------------------------------------------------


@dataclass
class Contender:
    name: str
    label: str
    side: str  # "floor", "store" or "langgraph"
    is_async: bool
    save: Callable[[Turn], Any]
    load: Callable[[Turn], Any]
    check_load: Callable[[Turn, Any], bool]
    pgconn: Callable[[], Any]  # the libpq connection it talks through, for the protocol trace
    closers: list[Callable[[], object]] = field(default_factory=list)


def floor_sync(conninfo: str, payload_of: Callable[[], Payload]) -> Contender:
    """The port's statement through bare psycopg, prepared, with an already encoded record."""
    import psycopg

    conn = psycopg.connect(conninfo, autocommit=True)
    cur = conn.cursor()

    def save(turn: Turn) -> None:
        now = datetime.now(UTC)
        c = turn.claims
        record = payload_of().records[turn.variant]
        cur.execute(
            SQL_WRITE,
            (c.thread_id, c.checkpoint_id, turn.key, record, None, FLOOR_MAC, c.run_id, now, now),
            prepare=True,
        )

    def load(turn: Turn) -> str | None:
        cur.execute(SQL_READ, (turn.claims.thread_id, turn.claims.checkpoint_id, turn.key), prepare=True)
        row = cur.fetchone()
        return None if row is None else str(row[0])

    return Contender(
        "floor",
        "floor psycopg",
        "floor",
        False,
        save,
        load,
        lambda turn, got: got == payload_of().records[turn.variant],
        lambda: conn.pgconn,
        [conn.close],
    )


def floor_async(
    conninfo: str, payload_of: Callable[[], Payload], loop: asyncio.AbstractEventLoop
) -> Contender:
    import psycopg

    conn = loop.run_until_complete(psycopg.AsyncConnection.connect(conninfo, autocommit=True))
    cur = conn.cursor()

    async def save(turn: Turn) -> None:
        now = datetime.now(UTC)
        c = turn.claims
        record = payload_of().records[turn.variant]
        await cur.execute(
            SQL_WRITE,
            (c.thread_id, c.checkpoint_id, turn.key, record, None, FLOOR_MAC, c.run_id, now, now),
            prepare=True,
        )

    async def load(turn: Turn) -> str | None:
        await cur.execute(
            SQL_READ, (turn.claims.thread_id, turn.claims.checkpoint_id, turn.key), prepare=True
        )
        row = await cur.fetchone()
        return None if row is None else str(row[0])

    return Contender(
        "floor_async",
        "floor psycopg async",
        "floor",
        True,
        save,
        load,
        lambda turn, got: got == payload_of().records[turn.variant],
        lambda: conn.pgconn,
        [lambda: loop.run_until_complete(conn.close())],
    )


def store_sync(store: Any) -> Contender:
    from django.db import connection

    def save(turn: Turn) -> None:
        if not store.record_sync(turn.claims, turn.checkpoint):
            raise RuntimeError(f"record_sync did not land for {turn.claims.jti}")

    def load(turn: Turn) -> Any:
        return store.load_sync(turn.claims)

    def pgconn() -> Any:
        connection.ensure_connection()
        return connection.connection.pgconn

    return Contender(
        "store_sync",
        "store record_sync/load_sync",
        "store",
        False,
        save,
        load,
        lambda turn, got: got == turn.checkpoint,
        pgconn,
    )


def store_async(store: Any, loop: asyncio.AbstractEventLoop) -> Contender:
    from asgiref.sync import sync_to_async
    from django.db import connection

    async def save(turn: Turn) -> None:
        if not await store.record(turn.claims, turn.checkpoint):
            raise RuntimeError(f"record did not land for {turn.claims.jti}")

    async def load(turn: Turn) -> Any:
        return await store.load(turn.claims)

    def executor_pgconn() -> Any:
        connection.ensure_connection()
        return connection.connection.pgconn

    def pgconn() -> Any:
        return loop.run_until_complete(sync_to_async(executor_pgconn, thread_sensitive=True)())

    return Contender(
        "store_async",
        "store async record/load",
        "store",
        True,
        save,
        load,
        lambda turn, got: got == turn.checkpoint,
        pgconn,
    )


def _lg_loaded(payload_of: Callable[[], Payload]) -> Callable[[Turn, Any], bool]:
    def check(turn: Turn, got: Any) -> bool:
        if got is None:
            return False
        values = got.checkpoint["channel_values"]
        expected = payload_of().lg_checkpoints[turn.variant]["channel_values"]
        interrupts = [w for w in got.pending_writes if w[1] == turn.writes[0][0]]
        return bool(
            values["messages"] == expected["messages"]
            and values["prompt"] == expected["prompt"]
            and interrupts
            and interrupts[0][2][0].value == REQUEST
        )

    return check


def langgraph_sync(conninfo: str, payload_of: Callable[[], Payload]) -> Contender:
    """``PostgresSaver`` on one connection, set up exactly as ``PostgresSaver.from_conn_string`` does."""
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg import Connection
    from psycopg.rows import dict_row

    conn = Connection.connect(conninfo, autocommit=True, prepare_threshold=0, row_factory=dict_row)
    saver = PostgresSaver(conn)
    clock = time.perf_counter_ns

    def save(turn: Turn) -> tuple[int, int]:
        payload = payload_of()
        start = clock()
        saved = saver.put(
            turn.config,
            payload.lg_checkpoints[turn.variant],
            LG_METADATA,
            payload.lg_versions[turn.variant],
        )
        mid = clock()
        saver.put_writes(saved, turn.writes, turn.task_id)
        return mid - start, clock() - mid

    def load(turn: Turn) -> Any:
        return saver.get_tuple(turn.config)

    return Contender(
        "langgraph",
        "LangGraph PostgresSaver",
        "langgraph",
        False,
        save,
        load,
        _lg_loaded(payload_of),
        lambda: conn.pgconn,
        [conn.close],
    )


def langgraph_async(
    conninfo: str, payload_of: Callable[[], Payload], loop: asyncio.AbstractEventLoop
) -> Contender:
    """``AsyncPostgresSaver``, set up as ``AsyncPostgresSaver.from_conn_string`` does."""
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg import AsyncConnection
    from psycopg.rows import dict_row

    async def build() -> tuple[Any, AsyncPostgresSaver]:
        conn = await AsyncConnection.connect(
            conninfo, autocommit=True, prepare_threshold=0, row_factory=dict_row
        )
        return conn, AsyncPostgresSaver(conn)

    conn, saver = loop.run_until_complete(build())
    clock = time.perf_counter_ns

    async def save(turn: Turn) -> tuple[int, int]:
        payload = payload_of()
        start = clock()
        saved = await saver.aput(
            turn.config,
            payload.lg_checkpoints[turn.variant],
            LG_METADATA,
            payload.lg_versions[turn.variant],
        )
        mid = clock()
        await saver.aput_writes(saved, turn.writes, turn.task_id)
        return mid - start, clock() - mid

    async def load(turn: Turn) -> Any:
        return await saver.aget_tuple(turn.config)

    return Contender(
        "langgraph_async",
        "LangGraph AsyncPostgresSaver",
        "langgraph",
        True,
        save,
        load,
        _lg_loaded(payload_of),
        lambda: conn.pgconn,
        [lambda: loop.run_until_complete(conn.close())],
    )


# -- administration ---------------------------------------------------------------------------------


class Admin:
    """Truncates and analyses every table involved, through a connection no contender uses."""

    def __init__(self, conninfo: str) -> None:
        import psycopg

        self.conn = psycopg.connect(conninfo, autocommit=True)

    def setup_langgraph(self, conninfo: str) -> None:
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(conninfo) as saver:
            saver.setup()

    def set_value_storage(self, mode: str) -> None:
        """How PostgreSQL stores our ``value`` column: as migrated (``extended``, pglz) or an alternative.

        A diagnostic for the bench database only: on large incompressible values the pglz
        attempt costs more than the write itself (see bench/README.md).
        """
        storage, compression = {
            "extended": ("EXTENDED", "default"),
            "external": ("EXTERNAL", "default"),
            "lz4": ("EXTENDED", "lz4"),
        }[mode]
        column = f'ALTER TABLE "{TABLE}" ALTER COLUMN "value"'
        self.conn.execute(f"{column} SET STORAGE {storage}")
        self.conn.execute(f"{column} SET COMPRESSION {compression}")

    def foreign_rows(self) -> int:
        """Rows this bench did not write (its thread ids all start with ``bench-``)."""
        total = 0
        for table in (TABLE, *LG_TABLES):
            row = self.conn.execute(
                f"SELECT count(*) FROM \"{table}\" WHERE thread_id NOT LIKE 'bench-%'"
            ).fetchone()
            total += int(row[0]) if row else 0
        return total

    def truncate(self) -> None:
        self.conn.execute("TRUNCATE " + ", ".join(f'"{t}"' for t in (TABLE, *LG_TABLES)))

    def analyze(self) -> None:
        for table in (TABLE, *LG_TABLES):
            self.conn.execute(f'ANALYZE "{table}"')

    def stored_bytes(self) -> dict[str, float]:
        """Average bytes each side stores per turn (pg_column_size: after any compression)."""
        out: dict[str, float] = {}
        queries = {
            "store_value": f'SELECT avg(pg_column_size("value")) FROM "{TABLE}"',
            "langgraph_checkpoint_jsonb": "SELECT avg(pg_column_size(checkpoint)) FROM checkpoints",
            "langgraph_blobs_per_checkpoint": "SELECT sum(pg_column_size(blob))::float / "
            "nullif((SELECT count(*) FROM checkpoints), 0) FROM checkpoint_blobs",
            "langgraph_writes_blob": "SELECT avg(pg_column_size(blob)) FROM checkpoint_writes",
        }
        for name, sql in queries.items():
            row = self.conn.execute(sql).fetchone()
            out[name] = float(row[0]) if row and row[0] is not None else 0.0
        return out


# -- the run ----------------------------------------------------------------------------------------


@dataclass
class PhaseResult:
    samples: dict[str, list[int]]
    split: dict[str, dict[str, list[int]]]  # LangGraph save: time in put and in put_writes


def run_chunk(
    op: str, contender: Contender, part: list[Turn], loop: asyncio.AbstractEventLoop
) -> tuple[list[int], list[Any]]:
    fn = contender.save if op == "save" else contender.load
    items = [(turn,) for turn in part]
    if contender.is_async:
        return loop.run_until_complete(timed_async(fn, items))
    return timed_sync(fn, items)


def run_round(
    round_no: int,
    round_label: str,
    n: int,
    chunk: int,
    contenders: list[Contender],
    admin: Admin,
    loop: asyncio.AbstractEventLoop,
    payload: Payload,
) -> dict[str, PhaseResult]:
    """Every contender saves its n turns (in alternating chunks), then loads them back."""
    admin.truncate()
    turns = {c.name: make_turns(c, round_label, n, payload) for c in contenders}
    out: dict[str, PhaseResult] = {}
    for op in OPS:
        if op == "load":
            admin.analyze()
        result = PhaseResult({c.name: [] for c in contenders}, {})
        for j, start in enumerate(range(0, n, chunk)):
            for contender in rotation(contenders, j, round_no):
                part = turns[contender.name][start : start + chunk]
                got, results = run_chunk(op, contender, part, loop)
                result.samples[contender.name].extend(got)
                if op == "load":
                    for turn, value in zip(part, results, strict=True):
                        if not contender.check_load(turn, value):
                            raise SystemExit(
                                f"{contender.label}: load of {turn.claims.thread_id} read back {value!r:.200}"
                            )
                elif contender.side == "langgraph":
                    split = result.split.setdefault(contender.name, {"put": [], "put_writes": []})
                    split["put"].extend(r[0] for r in results)
                    split["put_writes"].extend(r[1] for r in results)
        out[op] = result
    return out


# -- what each call sends: the libpq protocol trace -------------------------------------------------


def protocol_counts(
    contender: Contender, op: str, turn: Turn, loop: asyncio.AbstractEventLoop
) -> dict[str, int]:
    """Statements and round trips of one warm call, from libpq's trace of the contender's connection."""
    return pg_protocol_counts(contender.pgconn(), lambda: run_chunk(op, contender, [turn], loop))


# -- report -----------------------------------------------------------------------------------------


@dataclass
class Row:
    size: int
    op: str
    contender: str
    label: str
    stats: dict[str, float]
    round_medians_us: list[float]
    ratio: float = 0.0
    ratio_async_floor: float | None = None
    round_ratios: list[float] = field(default_factory=list)


def summarize(size: int, contenders: list[Contender], rounds: list[dict[str, PhaseResult]]) -> list[Row]:
    rows: list[Row] = []
    for op in OPS:
        by_name: dict[str, Row] = {}
        for c in contenders:
            per_round = [r[op].samples[c.name] for r in rounds]
            pooled = [x for part in per_round for x in part]
            by_name[c.name] = Row(
                size, op, c.name, c.label, summary_us(pooled), [us(median(p)) for p in per_round]
            )
            if op == "save" and c.side == "langgraph":
                for part in ("put", "put_writes"):
                    split = [r[op].split[c.name][part] for r in rounds]
                    flat = [x for s in split for x in s]
                    by_name[f"{c.name}:{part}"] = Row(
                        size,
                        op,
                        f"{c.name}:{part}",
                        f"  of which {'a' if c.is_async else ''}{part}",
                        summary_us(flat),
                        [us(median(s)) for s in split],
                    )
        floor, afloor = by_name["floor"], by_name["floor_async"]
        for name, row in by_name.items():
            row.ratio = row.stats["median_us"] / floor.stats["median_us"]
            row.round_ratios = [
                a / b for a, b in zip(row.round_medians_us, floor.round_medians_us, strict=True)
            ]
            if name.startswith(("floor_async", "store_async", "langgraph_async")):
                row.ratio_async_floor = row.stats["median_us"] / afloor.stats["median_us"]
        rows.extend(by_name.values())
    return rows


def render(rows: list[Row], payloads: dict[int, dict[str, Any]]) -> str:
    out = io.StringIO()
    w = out.write
    cols = (
        f"{'operation':<15} {'contender':<30} {'median':>9} {'p95':>9} {'x floor':>8} "
        f"{'x async floor':>13} {'rounds x floor':>15}"
    )
    for size in sorted({r.size for r in rows}):
        info = payloads[size]
        w(
            f"\nvalue {size} B: our record {info['record_bytes']} B; LangGraph stores a "
            f"{info['lg_messages_msgpack_bytes']} B msgpack blob of messages + the checkpoint JSONB "
            "+ the interrupt write\n\n"
        )
        w(cols + "\n" + "-" * len(cols) + "\n")
        last = ""
        for r in (r for r in rows if r.size == size):
            op_cell = OP_TITLES[r.op] if r.op != last else ""
            last = r.op
            spread = f"{min(r.round_ratios):.2f}-{max(r.round_ratios):.2f}" if r.contender != "floor" else ""
            async_ratio = f"{r.ratio_async_floor:.2f}x" if r.ratio_async_floor is not None else ""
            w(
                f"{op_cell:<15} {r.label:<30} {r.stats['median_us']:>9.1f} {r.stats['p95_us']:>9.1f} "
                f"{r.ratio:>7.2f}x {async_ratio:>13} {spread:>15}\n"
            )
    w(
        "\nTimes in microseconds per call. 'x floor' = median / the sync floor's median, same size and\n"
        "operation; 'x async floor' = median / psycopg AsyncConnection's; 'rounds x floor' = range of the\n"
        "per-round median ratios. Save = put + put_writes for LangGraph, record for the store.\n"
    )
    return out.getvalue()


def render_protocol(protocol: dict[str, dict[str, dict[str, int]]], labels: dict[str, str]) -> str:
    out = io.StringIO()
    cols = f"{'contender':<30} {'op':<6} {'statements':>10} {'round trips':>11} {'parses':>6}"
    out.write(
        "\nper call, from libpq's protocol trace (after warm-up)\n\n" + cols + "\n" + "-" * len(cols) + "\n"
    )
    for name, ops in protocol.items():
        for op, counts in ops.items():
            out.write(
                f"{labels[name]:<30} {op:<6} {counts['statements']:>10} {counts['round_trips']:>11} "
                f"{counts['parses']:>6}\n"
            )
    return out.getvalue()


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for dist in (
        "langgraph",
        "langgraph-checkpoint",
        "langgraph-checkpoint-postgres",
        "langchain-core",
        "psycopg-pool",
        "ormsgpack",
        "pydantic",
    ):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[dist] = None
    return found


# -- main -------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--database", default=DEFAULT_URL, help=f"a postgres:// URL (default {DEFAULT_URL})")
    parser.add_argument("--sizes", default="2048,204800", help="transcript sizes in bytes, comma-separated")
    parser.add_argument("--n", default="1000,200", help="turns per contender per round, one per size")
    parser.add_argument(
        "--repeat", type=int, default=5, help="timed rounds per size (after one warm-up round)"
    )
    parser.add_argument("--chunk", type=int, default=50, help="calls a contender makes before the next one")
    parser.add_argument(
        "--force", action="store_true", help="truncate the tables even if others' rows are there"
    )
    parser.add_argument(
        "--value-storage",
        choices=("extended", "external", "lz4"),
        default="extended",
        help="diagnostic: how PostgreSQL stores our value column (extended = as migrated: pglz)",
    )
    parser.add_argument("--output", type=Path, default=None, help="JSON path (default bench/results/...)")
    args = parser.parse_args(argv)
    args.sizes = [int(s) for s in str(args.sizes).split(",")]
    ns = [int(s) for s in str(args.n).split(",")]
    if len(ns) == 1:
        ns = ns * len(args.sizes)
    if len(ns) != len(args.sizes) or min(ns) < 1 or min(args.sizes) < 1 or args.repeat < 1 or args.chunk < 1:
        parser.error("--n needs one positive count per size; --sizes, --repeat and --chunk must be positive")
    args.n = ns
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import langgraph.checkpoint.postgres  # noqa: F401
    except ImportError:
        raise SystemExit("LangGraph is not installed: pip install -e '.[bench]'") from None
    target: Target = make_target(args.database)
    if target.vendor != "postgresql":
        raise SystemExit("bench/langgraph.py measures PostgreSQL only (LangGraph's PostgresSaver)")
    ensure_postgres_database(target.conninfo)
    configure_django(target)
    check_statements(target.vendor)

    from asgiref.sync import sync_to_async
    from django.db import connections

    from turnstate_app.ports import ModelCheckpointCommandPort
    from turnstate_app.turnstate import TurnCheckpointStore

    admin = Admin(target.conninfo)
    admin.setup_langgraph(target.conninfo)
    admin.set_value_storage(args.value_storage)
    if (foreign := admin.foreign_rows()) and not args.force:
        raise SystemExit(
            f"the bench tables hold {foreign} rows the bench did not write and it truncates them: "
            "point --database at a database of its own (e.g. .../turnstate_bench_lg) or pass --force"
        )
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    current: list[Payload] = []

    def payload_of() -> Payload:
        return current[0]

    store = TurnCheckpointStore(commands=ModelCheckpointCommandPort())
    contenders = [
        floor_sync(target.conninfo, payload_of),
        store_sync(store),
        langgraph_sync(target.conninfo, payload_of),
        floor_async(target.conninfo, payload_of, loop),
        store_async(store, loop),
        langgraph_async(target.conninfo, payload_of, loop),
    ]
    env = environment(target, server_version(target), args)
    env["packages"] = versions()
    started = time.monotonic()
    print(
        f"{env['database_server'].split(' on ')[0]} | Django {env['django']} | psycopg {env['psycopg']} | "
        f"LangGraph {env['packages']['langgraph']} (checkpoint-postgres "
        f"{env['packages']['langgraph-checkpoint-postgres']}) | {env['cpu_count']} CPUs | "
        f"our value column: {args.value_storage}",
        flush=True,
    )

    rows: list[Row] = []
    payload_info: dict[int, dict[str, Any]] = {}
    protocol: dict[int, dict[str, dict[str, dict[str, int]]]] = {}
    stored: dict[int, dict[str, float]] = {}
    for size, n in zip(args.sizes, args.n, strict=True):
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

        payload = make_payload(size)
        current[:] = [payload]
        payload_info[size] = {
            "record_bytes": len(payload.records[0].encode()),
            "messages": len(payload.lg_checkpoints[0]["channel_values"]["messages"]),
            "lg_messages_msgpack_bytes": len(
                JsonPlusSerializer().dumps_typed(payload.lg_checkpoints[0]["channel_values"]["messages"])[1]
            ),
        }
        gc.unfreeze()
        gc.collect()
        run_round(0, f"w{size}", min(n, 100), args.chunk, contenders, admin, loop, payload)  # warm-up
        gc.collect()
        gc.freeze()
        rounds = []
        for r in range(args.repeat):
            rounds.append(run_round(r, f"s{size}r{r}", n, args.chunk, contenders, admin, loop, payload))
            print(
                f"size {size} B: round {r + 1}/{args.repeat} done ({time.monotonic() - started:.0f}s)",
                flush=True,
            )
        stored[size] = admin.stored_bytes()
        rows.extend(summarize(size, contenders, rounds))
        # What one call sends, on a warm connection, for each side.
        admin.truncate()
        traced: dict[str, dict[str, dict[str, int]]] = {}
        for c in contenders:
            turn = make_turns(c, f"t{size}", 1, payload)[0]
            traced[c.name] = {op: protocol_counts(c, op, turn, loop) for op in OPS}
        protocol[size] = traced
    finish_environment(env, started)

    labels = {c.name: c.label for c in contenders}
    table = render(rows, payload_info) + render_protocol(protocol[args.sizes[0]], labels)
    print(table)
    suffix = "" if args.value_storage == "extended" else f"-{args.value_storage}"
    write_json(
        args.output or RESULTS_DIR / f"langgraph-postgresql{suffix}.json",
        {
            "environment": env,
            "payloads": payload_info,
            "stored_bytes_per_turn": stored,
            "rows": [vars(r) for r in rows],
            "protocol_per_call": protocol,
            "table": table,
            "sql": {"store_read": SQL_READ, "store_write": SQL_WRITE},
        },
    )

    for c in contenders:
        for close in c.closers:
            close()
    loop.run_until_complete(sync_to_async(connections.close_all, thread_sensitive=True)())
    connections.close_all()
    admin.truncate()
    admin.set_value_storage("extended")
    admin.conn.close()
    loop.close()
    if target.tmpdir:
        shutil.rmtree(target.tmpdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
