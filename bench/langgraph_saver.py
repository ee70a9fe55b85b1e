#!/usr/bin/env python
"""``DjangoCheckpointSaver`` beside LangGraph's own savers, in one process, on one database.

PostgreSQL: against ``PostgresSaver`` and ``AsyncPostgresSaver``; SQLite: against
``SqliteSaver`` and ``AsyncSqliteSaver``. Each round times ``put``, ``put_writes``,
``get_tuple`` and ``list`` (sync and async) at 2 KB and 200 KB, the contenders taking turns
in a rotating order, and the workload "a 5-step thread whose 200 KB messages channel
changes each step" (time and bytes stored). It reports the median of the rounds and each of
ours as a ratio to LangGraph's counterpart, and the statements each call sends (BEGIN and
COMMIT included), traced on the connection the call runs on, whichever thread that is.

``--only runs`` times whole graph runs instead (see ``run_whole_runs``): a 10-node linear graph,
a 5-turn model/tool loop with 2 KB and 200 KB messages, two parallel branches and an interrupt;
``invoke`` and ``ainvoke``, ``durability="sync"`` and ``"async"``; time per run, bytes stored per
thread and connections opened per run. ``--only calls`` the single calls alone.

A benchmark, not a test: it prints a table, writes ``bench/results/langgraph-saver[-runs]-<vendor>.json``
and exits 0. Needs the ``bench`` extra. From the repository root::

    .venv/bin/python bench/langgraph_saver.py --database sqlite
    .venv/bin/python bench/langgraph_saver.py --database postgres://postgres@127.0.0.1:5432/turnstate_bench_lgs
"""

from __future__ import annotations

import argparse
import asyncio
import operator
import os
import sqlite3
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
# Run as a script, this file's directory heads sys.path; keep it from shadowing anything.
sys.path[:] = [p for p in sys.path if Path(p or os.curdir).resolve() != BENCH_DIR]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from langgraph.graph import END, START, StateGraph  # noqa: E402 - after bench/ left sys.path
from langgraph.graph.message import add_messages  # noqa: E402
from typing_extensions import TypedDict  # noqa: E402

from bench.common import (  # noqa: E402 - needs the repository root on sys.path
    RESULTS_DIR,
    Target,
    ensure_postgres_database,
    environment,
    finish_environment,
    make_target,
    median,
    pg_protocol_counts,
    rotation,
    server_version,
    timed_async,
    timed_sync,
    us,
    write_json,
)

OPS = ("put", "put_writes", "get_tuple", "list")
SIZES = (2_000, 200_000)
STEPS = 5
TARGET_STRICT = {("put", 2_000), ("put_writes", 2_000), ("get_tuple", 2_000)}  # sync rows: <= 1.0x


def messages(size: int, salt: int) -> list[dict[str, str]]:
    """A transcript of about ``size`` bytes, one message per ~1 KB, different for each ``salt``."""
    count = max(2, size // 1000)
    body = "".join(chr(97 + (salt + i) % 26) for i in range(size // count - 40))
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"{salt}:{i}:{body}"} for i in range(count)
    ]


@dataclass
class Saver:
    """One contender: a saver, whether it is ours, whether its calls are awaited, how to trace it."""

    name: str
    ours: bool
    is_async: bool
    saver: Any
    trace: Callable[[Callable[[], object]], int]  # statements one call sends
    stored_bytes: Callable[[str], int]
    samples: dict[str, list[float]] = field(default_factory=dict)


class Runner:
    def __init__(self, target: Target, loop: asyncio.AbstractEventLoop) -> None:
        self.target = target
        self.loop = loop

    def call(self, contender: Saver, op: str, *args: Any, **kwargs: Any) -> Any:
        method = getattr(contender.saver, ("a" if contender.is_async else "") + op)
        if not contender.is_async:
            result = method(*args, **kwargs)
            return list(result) if op == "list" else result
        if op == "list":

            async def collect() -> list[Any]:
                return [item async for item in method(*args, **kwargs)]

            return self.loop.run_until_complete(collect())
        return self.loop.run_until_complete(method(*args, **kwargs))

    def timed(self, contender: Saver, op: str, items: list[tuple[Any, ...]]) -> list[int]:
        method = getattr(contender.saver, ("a" if contender.is_async else "") + op)
        if not contender.is_async:
            fn = (lambda *a: list(method(*a))) if op == "list" else method
            return timed_sync(fn, items)[0]
        if op == "list":

            async def afn(*a: Any) -> list[Any]:
                return [item async for item in method(*a)]

            return self.loop.run_until_complete(timed_async(afn, items))[0]
        return self.loop.run_until_complete(timed_async(method, items))[0]


def checkpoint_of(size: int, salt: int, version: str) -> Any:
    from langgraph.checkpoint.base import empty_checkpoint

    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": messages(size, salt), "step": salt}
    checkpoint["channel_versions"] = {"messages": version, "step": version}
    return checkpoint


def config_of(thread: str, checkpoint_id: str | None = None) -> Any:
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if checkpoint_id:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


# -- contenders -----------------------------------------------------------------------------------


def ours(target: Target, loop: asyncio.AbstractEventLoop, *, is_async: bool) -> Saver:
    from asgiref.sync import sync_to_async
    from django.db import connections

    from turnstate_app.contrib.langgraph import DjangoCheckpointSaver

    def executor_connection() -> Any:
        connection = connections["default"]
        connection.ensure_connection()
        return connection.connection

    def driver_connection() -> Any:
        if is_async:
            return loop.run_until_complete(sync_to_async(executor_connection, thread_sensitive=True)())
        return executor_connection()

    def trace(call: Callable[[], object]) -> int:
        driver = driver_connection()
        if target.vendor == "postgresql":
            return pg_protocol_counts(driver.pgconn, call)["statements"]
        return sqlite_statements(driver, call, threaded=is_async, loop=loop)

    def stored(thread: str) -> int:
        return our_bytes(target, thread)

    name = "DjangoCheckpointSaver" + (" async" if is_async else "")
    return Saver(name, True, is_async, DjangoCheckpointSaver(), trace, stored)


def theirs(target: Target, loop: asyncio.AbstractEventLoop, *, is_async: bool) -> Saver:
    if target.vendor == "postgresql":
        return postgres_saver(target, loop, is_async=is_async)
    return sqlite_saver(target, loop, is_async=is_async)


def postgres_saver(target: Target, loop: asyncio.AbstractEventLoop, *, is_async: bool) -> Saver:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row

    saver: Any
    if is_async:

        async def build() -> Any:
            conn = await psycopg.AsyncConnection.connect(
                target.conninfo, autocommit=True, prepare_threshold=0, row_factory=dict_row
            )
            built = AsyncPostgresSaver(conn)  # type: ignore[arg-type]
            await built.setup()
            return built

        saver = loop.run_until_complete(build())
    else:
        conn = psycopg.connect(target.conninfo, autocommit=True, prepare_threshold=0, row_factory=dict_row)
        saver = PostgresSaver(conn)  # type: ignore[arg-type]
        saver.setup()

    def trace(call: Callable[[], object]) -> int:
        return pg_protocol_counts(saver.conn.pgconn, call)["statements"]

    def stored(thread: str) -> int:
        return postgres_bytes(target.conninfo, thread)

    name = "AsyncPostgresSaver" if is_async else "PostgresSaver"
    return Saver(name, False, is_async, saver, trace, stored)


def sqlite_saver(target: Target, loop: asyncio.AbstractEventLoop, *, is_async: bool) -> Saver:
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    path = os.path.join(target.tmpdir, "langgraph.sqlite3")
    saver: Any
    if is_async:
        import aiosqlite

        async def build() -> Any:
            conn = await aiosqlite.connect(path)
            await conn.execute("PRAGMA journal_mode=WAL")
            await conn.execute("PRAGMA synchronous=NORMAL")
            built = AsyncSqliteSaver(conn)
            await built.setup()
            return built

        saver = loop.run_until_complete(build())
    else:
        conn = sqlite3.connect(path, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        saver = SqliteSaver(conn)
        saver.setup()

    def trace(call: Callable[[], object]) -> int:
        if not is_async:
            return sqlite_statements(saver.conn, call, threaded=False, loop=loop)
        seen: list[str] = []
        loop.run_until_complete(saver.conn.set_trace_callback(seen.append))
        try:
            call()
        finally:
            loop.run_until_complete(saver.conn.set_trace_callback(None))
        return len(seen)

    def stored(thread: str) -> int:
        return sqlite_bytes(path, thread)

    name = "AsyncSqliteSaver" if is_async else "SqliteSaver"
    return Saver(name, False, is_async, saver, trace, stored)


def sqlite_statements(
    conn: sqlite3.Connection, call: Callable[[], object], *, threaded: bool, loop: asyncio.AbstractEventLoop
) -> int:
    """Statements ``conn`` runs during ``call`` (set from the connection's own thread when ``threaded``)."""
    from asgiref.sync import sync_to_async

    seen: list[str] = []

    def set_trace(callback: Any) -> None:
        conn.set_trace_callback(callback)

    def apply(callback: Any) -> None:
        if threaded:
            loop.run_until_complete(sync_to_async(set_trace, thread_sensitive=True)(callback))
        else:
            set_trace(callback)

    apply(seen.append)
    try:
        call()
    finally:
        apply(None)
    return len(seen)


# -- bytes stored ---------------------------------------------------------------------------------


def our_bytes(target: Target, thread: str) -> int:
    from django.db import connection

    text = "octet_length(metadata::text)" if target.vendor == "postgresql" else "length(metadata)"
    blob = "octet_length" if target.vendor == "postgresql" else "length"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT COALESCE(SUM({blob}(checkpoint) + {text}), 0) "
            "FROM turnstate_langgraph_checkpoint WHERE thread_id = %s) "
            "+ (SELECT COALESCE(SUM({blob}(blob)), 0) FROM turnstate_langgraph_channelblob "
            "WHERE thread_id = %s) "
            "+ (SELECT COALESCE(SUM({blob}(blob)), 0) FROM turnstate_langgraph_checkpointwrite "
            "WHERE thread_id = %s)".replace("{blob}", blob),
            (thread, thread, thread),
        )
        (total,) = cursor.fetchone()
    return int(total)


def postgres_bytes(conninfo: str, thread: str) -> int:
    import psycopg

    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute(
            "SELECT (SELECT COALESCE(SUM(octet_length(checkpoint::text) + octet_length(metadata::text)), 0) "
            "FROM checkpoints WHERE thread_id = %s) + (SELECT COALESCE(SUM(octet_length(blob)), 0) "
            "FROM checkpoint_blobs WHERE thread_id = %s) + (SELECT COALESCE(SUM(octet_length(blob)), 0) "
            "FROM checkpoint_writes WHERE thread_id = %s)",
            (thread, thread, thread),
        ).fetchone()
    return int(row[0]) if row else 0


def sqlite_bytes(path: str, thread: str) -> int:
    conn = sqlite3.connect(path)
    try:
        row = conn.execute(
            "SELECT (SELECT COALESCE(SUM(length(checkpoint) + length(metadata)), 0) FROM checkpoints "
            "WHERE thread_id = ?) + (SELECT COALESCE(SUM(length(value)), 0) FROM writes WHERE thread_id = ?)",
            (thread, thread),
        ).fetchone()
    finally:
        conn.close()
    return int(row[0])


# -- the run --------------------------------------------------------------------------------------


def configure(target: Target) -> None:
    import django
    from django.conf import settings
    from django.core.management import call_command

    settings.configure(
        DEBUG=False,
        SECRET_KEY="turnstate-bench-only",
        USE_TZ=True,
        TIME_ZONE="UTC",
        INSTALLED_APPS=[
            "django.contrib.contenttypes",
            "django.contrib.auth",
            "turnstate_app",
            "turnstate_app.contrib.langgraph",
        ],
        DATABASES={"default": target.django_db},
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
    )
    django.setup()
    call_command("migrate", verbosity=0, interactive=False)


def run_round(runner: Runner, contenders: list[Saver], size: int, n: int, round_no: int) -> None:
    """Every op for every contender at one size; the order rotates each op and round."""
    from langgraph.checkpoint.serde.types import INTERRUPT
    from langgraph.types import Interrupt

    put_configs: dict[str, list[Any]] = {}
    items: list[tuple[Any, ...]]
    for op_no, op in enumerate(OPS):
        for contender in rotation(contenders, op_no, round_no):
            run = f"r{round_no}-{contender.name.replace(' ', '_')}-{uuid.uuid4().hex[:6]}"
            if op == "put":
                version = f"{1:032}.{round_no:016}"
                items = [
                    (
                        config_of(f"{run}-{i}"),
                        checkpoint_of(size, i, version),
                        {"source": "loop", "step": 1},
                        {"messages": version, "step": version},
                    )
                    for i in range(n)
                ]
                samples = runner.timed(contender, op, items)
                put_configs[contender.name] = [
                    config_of(f"{run}-{i}", item[1]["id"]) for i, item in enumerate(items)
                ]
            elif op == "put_writes":
                items = [
                    (
                        cfg,
                        [
                            (INTERRUPT, [Interrupt(value={"question": "Go on?"}, id=f"i-{i}")]),
                            ("messages", messages(size, i)),
                        ],
                        f"task-{i}",
                    )
                    for i, cfg in enumerate(put_configs[contender.name])
                ]
                samples = runner.timed(contender, op, items)
            else:  # get_tuple and list: the thread's head, and the thread
                items = [
                    (config_of(cfg["configurable"]["thread_id"]),) for cfg in put_configs[contender.name]
                ]
                samples = runner.timed(contender, op, items)
            contender.samples.setdefault(f"{op}@{size}", []).append(median(samples))


def run_workload(runner: Runner, contender: Saver, round_no: int) -> tuple[float, int]:
    """A 5-step thread whose 200 KB messages channel changes each step: (milliseconds, bytes stored)."""
    thread = f"w{round_no}-{contender.name.replace(' ', '_')}-{uuid.uuid4().hex[:6]}"
    parent: str | None = None
    version: str | None = None
    started = time.perf_counter()
    for step in range(STEPS):
        version = contender.saver.get_next_version(version, None)
        checkpoint = checkpoint_of(200_000, step, str(version))
        stored = runner.call(
            contender,
            "put",
            config_of(thread, parent),
            checkpoint,
            {"source": "loop", "step": step},
            {"messages": version, "step": version},
        )
        parent = stored["configurable"]["checkpoint_id"]
    elapsed = (time.perf_counter() - started) * 1000
    return elapsed, contender.stored_bytes(thread)


def statements(runner: Runner, contender: Saver, size: int) -> dict[str, int]:
    from langgraph.checkpoint.serde.types import INTERRUPT

    thread = f"s-{contender.name.replace(' ', '_')}-{uuid.uuid4().hex[:6]}"
    version = f"{1:032}.0"
    checkpoint = checkpoint_of(size, 1, version)
    counts: dict[str, int] = {}
    holder: dict[str, Any] = {}

    def put() -> None:
        holder["cfg"] = runner.call(
            contender,
            "put",
            config_of(thread),
            checkpoint,
            {"source": "loop", "step": 1},
            {"messages": version, "step": version},
        )

    counts["put"] = contender.trace(put)
    counts["put_writes"] = contender.trace(
        lambda: runner.call(
            contender, "put_writes", holder["cfg"], [(INTERRUPT, ["q"]), ("messages", "x")], "task-1"
        )
    )
    counts["get_tuple"] = contender.trace(lambda: runner.call(contender, "get_tuple", config_of(thread)))
    counts["list"] = contender.trace(lambda: runner.call(contender, "list", config_of(thread)))
    return counts


# -- whole graph runs -----------------------------------------------------------------------------


class ListState(TypedDict):
    items: Annotated[list[str], operator.add]


class ChatState(TypedDict):
    messages: Annotated[list[Any], add_messages]


class BranchState(TypedDict, total=False):
    notes: Annotated[list[str], operator.add]
    answer: str


def linear_graph(saver: Any) -> Any:
    """10 nodes one after the other, each appending 200 bytes to a list channel."""
    builder = StateGraph(ListState)
    previous = START
    for step in range(10):

        def append(state: ListState, step: int = step) -> dict[str, Any]:
            return {"items": [f"{step}:" + "x" * 200]}

        builder.add_node(f"node{step}", append)
        builder.add_edge(previous, f"node{step}")
        previous = f"node{step}"
    builder.add_edge(previous, END)
    return builder.compile(checkpointer=saver)


def tool_loop_graph(saver: Any, size: int) -> Any:
    """A fake chat model calling a tool 5 times (messages of ``size`` bytes), then answering."""
    from langchain_core.messages import AIMessage, ToolMessage

    def model(state: ChatState) -> dict[str, Any]:
        turn = sum(1 for m in state["messages"] if isinstance(m, ToolMessage))
        text = text_of(size, turn)
        if turn >= TURNS:
            return {"messages": [AIMessage(content=text)]}
        call = {"name": "lookup", "args": {"turn": turn}, "id": f"call-{turn}"}
        return {"messages": [AIMessage(content=text, tool_calls=[call])]}

    def tools(state: ChatState) -> dict[str, Any]:
        call = state["messages"][-1].tool_calls[0]
        return {
            "messages": [
                ToolMessage(content=text_of(size, 100 + call["args"]["turn"]), tool_call_id=call["id"])
            ]
        }

    def route(state: ChatState) -> str:
        return "tools" if state["messages"][-1].tool_calls else END

    builder = StateGraph(ChatState)
    builder.add_node("model", model)
    builder.add_node("tools", tools)
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", route, ["tools", END])
    builder.add_edge("tools", "model")
    return builder.compile(checkpointer=saver)


def branches_graph(saver: Any) -> Any:
    """Two parallel branches, a join, then an interrupt the run is resumed from."""
    from langgraph.types import interrupt

    def left(state: BranchState) -> dict[str, Any]:
        return {"notes": ["left:" + "l" * 500]}

    def right(state: BranchState) -> dict[str, Any]:
        return {"notes": ["right:" + "r" * 500]}

    def join(state: BranchState) -> dict[str, Any]:
        return {"notes": [f"joined {len(state['notes'])}"]}

    def ask(state: BranchState) -> dict[str, Any]:
        return {"answer": interrupt({"question": "Go on?"})}

    builder = StateGraph(BranchState)
    for name, node in (("left", left), ("right", right), ("join", join), ("ask", ask)):
        builder.add_node(name, node)
    builder.add_edge(START, "left")
    builder.add_edge(START, "right")
    builder.add_edge(["left", "right"], "join")
    builder.add_edge("join", "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=saver)


def text_of(size: int, salt: int) -> str:
    return "".join(chr(97 + (salt + i) % 26) for i in range(64)) * (size // 64) + "." * (size % 64)


TURNS = 5
GRAPHS: dict[str, Callable[[Any], Any]] = {
    "linear 10 nodes": linear_graph,
    "tool loop 2 KB": lambda saver: tool_loop_graph(saver, 2_000),
    "tool loop 200 KB": lambda saver: tool_loop_graph(saver, 200_000),
    "branches + interrupt": branches_graph,
}
MODES = (("sync", "sync"), ("sync", "async"), ("async", "sync"), ("async", "async"))


def whole_run(
    runner: Runner, contender: Saver, graph: Any, workload: str, durability: str, thread: str
) -> None:
    """One run of ``workload`` on a new thread: invoke (or ainvoke), resumed once after an interrupt."""
    from langgraph.types import Command

    config: Any = {"configurable": {"thread_id": thread}}
    first: Any = (
        {"items": []}
        if workload.startswith("linear")
        else ({"notes": []} if workload.startswith("branches") else {"messages": [("user", text_of(200, 0))]})
    )
    inputs = [first] + ([Command(resume="yes")] if workload.startswith("branches") else [])
    for given in inputs:
        if contender.is_async:
            runner.loop.run_until_complete(graph.ainvoke(given, config, durability=durability))
        else:
            graph.invoke(given, config, durability=durability)


def run_whole_runs(
    runner: Runner, contenders: list[Saver], rounds: int, runs: int, opened: list[Any]
) -> dict[str, Any]:
    """Every workload in every mode, the two contenders of that mode taking turns each round."""
    samples: dict[tuple[str, str, str, str], list[float]] = {}
    stored: dict[tuple[str, str, str, str], int] = {}
    connections: dict[tuple[str, str, str], list[float]] = {}
    graphs = {(c.name, w): build(c.saver) for c in contenders for w, build in GRAPHS.items()}
    for round_no in range(-1, rounds):  # round -1 warms up and is dropped
        for chunk, (workload, (invoke, durability)) in enumerate((w, m) for w in GRAPHS for m in MODES):
            pair = [c for c in contenders if c.is_async == (invoke == "async")]
            for contender in rotation(pair, chunk, round_no):
                graph = graphs[(contender.name, workload)]
                times: list[float] = []
                del opened[:]
                count = runs if round_no >= 0 else 2
                for i in range(count):
                    thread = (
                        f"run{round_no}-{chunk}-{contender.name.replace(' ', '_')}-{i}-{uuid.uuid4().hex[:6]}"
                    )
                    started = time.perf_counter()
                    whole_run(runner, contender, graph, workload, durability, thread)
                    times.append((time.perf_counter() - started) * 1000)
                if round_no < 0:
                    continue
                key = (workload, invoke, durability, contender.name)
                samples.setdefault(key, []).append(median(times))
                stored[key] = contender.stored_bytes(thread)
                if contender.ours:
                    connections.setdefault((workload, invoke, durability), []).append(len(opened) / count)
        print(f"whole runs: round {round_no + 1}/{rounds} done", flush=True)
    rows = []
    for workload in GRAPHS:
        for invoke, durability in MODES:
            mine = next(c for c in contenders if c.ours and c.is_async == (invoke == "async"))
            other = next(c for c in contenders if not c.ours and c.is_async == (invoke == "async"))
            ours_ms = median(samples[(workload, invoke, durability, mine.name)])
            theirs_ms = median(samples[(workload, invoke, durability, other.name)])
            ours_bytes = stored[(workload, invoke, durability, mine.name)]
            theirs_bytes = stored[(workload, invoke, durability, other.name)]
            limit = 1.0 if runner.target.vendor == "postgresql" else 1.3
            rows.append(
                {
                    "workload": workload,
                    "invoke": invoke,
                    "durability": durability,
                    "ours": mine.name,
                    "theirs": other.name,
                    "ours_ms": round(ours_ms, 2),
                    "theirs_ms": round(theirs_ms, 2),
                    "ratio": round(ours_ms / theirs_ms, 2),
                    "target": limit,
                    "meets_target": ours_ms / theirs_ms <= limit,
                    "round_medians_ms": {
                        mine.name: [round(x, 2) for x in samples[(workload, invoke, durability, mine.name)]],
                        other.name: [
                            round(x, 2) for x in samples[(workload, invoke, durability, other.name)]
                        ],
                    },
                    "ours_bytes": ours_bytes,
                    "theirs_bytes": theirs_bytes,
                    "bytes_ratio": round(ours_bytes / theirs_bytes, 3) if theirs_bytes else None,
                    "ours_connections_per_run": median(connections[(workload, invoke, durability)]),
                }
            )
    return {"rows": rows}


def print_whole_runs(result: dict[str, Any]) -> None:
    print()
    print(
        f"{'whole run':<21} {'invoke':<6} {'durab.':<6} {'ours ms':>8} {'theirs ms':>9} {'ratio':>6} "
        f"{'target':>6} {'bytes ours/theirs':>19} {'ratio':>6} {'conn/run':>8}"
    )
    for row in result["rows"]:
        print(
            f"{row['workload']:<21} {row['invoke']:<6} {row['durability']:<6} {row['ours_ms']:>8} "
            f"{row['theirs_ms']:>9} {row['ratio']:>6} {'<=' + str(row['target']):>6} "
            f"{str(row['ours_bytes']) + '/' + str(row['theirs_bytes']):>19} {row['bytes_ratio']!s:>6} "
            f"{row['ours_connections_per_run']:>8}{'' if row['meets_target'] else '  MISSED'}"
        )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--database", required=True, help="'sqlite' or a postgres:// URL of the bench's own database"
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--n-small", type=int, default=200, help="calls per op, contender and round at 2 KB")
    parser.add_argument("--n-large", type=int, default=20, help="calls per op, contender and round at 200 KB")
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument(
        "--prepared",
        action="store_true",
        help="PostgreSQL: Django's OPTIONS server_side_binding=True, prepare_threshold=5 (recommended)",
    )
    parser.add_argument(
        "--only",
        choices=("all", "calls", "runs"),
        default="all",
        help="calls: the single calls and the 5-step workload; runs: the whole graph runs",
    )
    parser.add_argument(
        "--runs", type=int, default=20, help="whole runs per workload, mode, contender and round"
    )
    parser.add_argument(
        "--conn-max-age",
        type=lambda v: None if v == "None" else int(v),
        default=0,
        help="Django's CONN_MAX_AGE for our saver (default 0, Django's own; 'None': unlimited)",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="run under cProfile, write its stats here and print the saver's costliest functions",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    target = make_target(args.database, 5 if args.prepared else None, server_side_binding=args.prepared)
    target.django_db["CONN_MAX_AGE"] = args.conn_max_age
    if target.vendor == "postgresql":
        ensure_postgres_database(target.conninfo)
    configure(target)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    runner = Runner(target, loop)
    contenders = [
        ours(target, loop, is_async=False),
        theirs(target, loop, is_async=False),
        ours(target, loop, is_async=True),
        theirs(target, loop, is_async=True),
    ]
    env = environment(target, server_version(target), args)
    env["packages"] = {
        name: metadata.version(name)
        for name in (
            "langgraph",
            "langgraph-checkpoint",
            f"langgraph-checkpoint-{'postgres' if target.vendor == 'postgresql' else 'sqlite'}",
        )
    }
    started = time.monotonic()
    print(
        f"{env['database_server'].split(' on ')[0]} | Django {env['django']} | {env['packages']} "
        f"| {env['cpu_count']} CPUs",
        flush=True,
    )

    from django.db.backends.signals import connection_created

    opened: list[Any] = []
    connection_created.connect(lambda sender, connection, **_: opened.append(connection), weak=False)
    which = {"all": "", "calls": "", "runs": "-runs"}[args.only]
    output = (
        args.output
        or RESULTS_DIR / f"langgraph-saver{which}-{target.vendor}{'-prepared' if args.prepared else ''}.json"
    )
    result: dict[str, Any] = {"environment": env}
    if args.only in ("all", "calls"):
        result.update(single_calls(runner, contenders, args))
    if args.only in ("all", "runs"):
        result["whole_runs"] = run_whole_runs(runner, contenders, args.rounds, args.runs, opened)
    finish_environment(env, started)
    if "rows" in result:
        print_single_calls(result)
    if "whole_runs" in result:
        print_whole_runs(result["whole_runs"])
    for contender in contenders:
        if not contender.ours:
            closing = contender.saver.conn.close()
            if asyncio.iscoroutine(closing):
                loop.run_until_complete(closing)
    write_json(output, result)
    return 0


def single_calls(runner: Runner, contenders: list[Saver], args: argparse.Namespace) -> dict[str, Any]:
    """Each single call at 2 KB and 200 KB, and the 5-step workload, in interleaved rounds."""
    workload: dict[str, dict[str, list[float]]] = {c.name: {"ms": [], "bytes": []} for c in contenders}
    for round_no in range(-1, args.rounds):  # round -1 warms up and is dropped
        for size, n in zip(
            SIZES, (args.n_small if round_no >= 0 else 20, args.n_large if round_no >= 0 else 3), strict=True
        ):
            run_round(runner, contenders, size, n, round_no)
        for contender in rotation(contenders, 0, round_no):
            ms, stored = run_workload(runner, contender, round_no)
            if round_no >= 0:
                workload[contender.name]["ms"].append(ms)
                workload[contender.name]["bytes"].append(stored)
        if round_no == -1:
            for contender in contenders:
                contender.samples.clear()
        print(f"round {round_no + 1}/{args.rounds} done", flush=True)

    counted = {c.name: {size: statements(runner, c, size) for size in SIZES} for c in contenders}
    rows: list[dict[str, Any]] = []
    for is_async in (False, True):
        mine = next(c for c in contenders if c.ours and c.is_async == is_async)
        other = next(c for c in contenders if not c.ours and c.is_async == is_async)
        for size in SIZES:
            for op in OPS:
                key = f"{op}@{size}"
                ours_us, theirs_us = us(median(mine.samples[key])), us(median(other.samples[key]))
                limit = 1.0 if (op, size) in TARGET_STRICT and not is_async else 1.5
                rows.append(
                    {
                        "op": op,
                        "size": size,
                        "async": is_async,
                        "ours": mine.name,
                        "theirs": other.name,
                        "ours_median_us": round(ours_us, 1),
                        "theirs_median_us": round(theirs_us, 1),
                        "ratio": round(ours_us / theirs_us, 2),
                        "target": limit,
                        "meets_target": ours_us / theirs_us <= limit,
                        "round_medians_us": {
                            mine.name: [round(us(x), 1) for x in mine.samples[key]],
                            other.name: [round(us(x), 1) for x in other.samples[key]],
                        },
                        "statements": {
                            mine.name: counted[mine.name][size][op],
                            other.name: counted[other.name][size][op],
                        },
                    }
                )
    work = {
        name: {"median_ms": round(median(v["ms"]), 1), "bytes": int(median(v["bytes"]))}
        for name, v in workload.items()
    }
    return {"rows": rows, "workload_5_step_200kb": work}


def print_single_calls(result: dict[str, Any]) -> None:
    rows, work = result["rows"], result["workload_5_step_200kb"]
    print()
    print(
        f"{'op':<11} {'size':>7} {'mode':<5} {'ours us':>10} {'theirs us':>10} {'ratio':>6} {'target':>6}  "
        "statements ours/theirs"
    )
    for row in rows:
        stm = list(row["statements"].values())
        print(
            f"{row['op']:<11} {row['size']:>7} {'async' if row['async'] else 'sync':<5} "
            f"{row['ours_median_us']:>10} {row['theirs_median_us']:>10} {row['ratio']:>6} "
            f"{'<=' + str(row['target']):>6}  {stm[0]}/{stm[1]}"
            f"{'' if row['meets_target'] else '  MISSED'}"
        )
    print()
    print("5-step thread, 200 KB messages channel changing each step:")
    for name, figures in work.items():
        print(f"  {name:<24} {figures['median_ms']:>8} ms  {figures['bytes']:>9} bytes stored")


def profiled(argv: list[str] | None = None) -> int:
    """:func:`main`, under cProfile when ``--profile`` is given (timings then include its overhead)."""
    args = parse_args(argv)
    if args.profile is None:
        return main(argv)
    import cProfile
    import pstats

    profile = cProfile.Profile()
    status = profile.runcall(main, argv)
    profile.dump_stats(str(args.profile))
    stats = pstats.Stats(profile)
    stats.sort_stats("tottime").print_stats("turnstate_app|django/db|sqlite3|psycopg|serde", 30)
    return status


if __name__ == "__main__":
    raise SystemExit(profiled())
