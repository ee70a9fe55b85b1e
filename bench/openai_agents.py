#!/usr/bin/env python
"""The OpenAI Agents SDK contrib: ``DjangoSession`` beside the SDK's own sessions, and one approval cycle.

**Sessions.** ``add_items`` of N items to a fresh session, then ``get_items()`` of those N, at
N = 10 and 1,000 (chat messages of about 200 bytes), awaited as the SDK awaits them, against
``SQLiteSession`` (a file in the same temporary directory) on SQLite and ``SQLAlchemySession``
(``postgresql+psycopg``, the same server and database) on PostgreSQL. The contenders take turns
in a rotating order; each row is the median call, with its ratio to the SDK's session.

**One approval cycle**, as a worker runs it (sync code): the run stops for two approvals,
``pause_approvals`` stores the state and mints the group, both pauses are answered
(``resume_pause``), ``continue_run`` claims, loads, checks, runs the agent and stores the new
state by compare-and-set. The agent's own run (``Runner.run``), the SDK's serialising
(``to_state().to_json()``, ``RunState.from_string``) and its applying of the answers to the rebuilt
state (``approve``, ``reject``, ``get_interruptions``; also shown on a line of their own) are timed
apart, and what is left is the app's overhead, reported as a multiple of one port upsert
(``write_metadata_sync``) measured in the same run, with the statements the cycle sent on every
connection and thread (by part: pause, answer both, continue) and its commits. A worker gets one
``continue_run`` per answer: the first answer's (the group still waits) is timed and counted on a
line of its own, outside the overhead. ``--cycle-only`` measures the cycle alone (the SDK's
sessions need the ``bench`` extra).

A benchmark, not a test: it prints a table, writes ``bench/results/openai-agents-<vendor>.json``
and exits 0. Needs the ``openai-agents`` and ``bench`` extras. From the repository root::

    .venv/bin/python bench/openai_agents.py --database sqlite
    .venv/bin/python bench/openai_agents.py --database postgres://postgres@127.0.0.1:5432/turnstate_bench_oai
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
sys.path[:] = [p for p in sys.path if Path(p or os.curdir).resolve() != BENCH_DIR]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.common import (  # noqa: E402 - needs the repository root on sys.path
    RESULTS_DIR,
    configure_django,
    ensure_postgres_database,
    environment,
    finish_environment,
    make_target,
    median,
    rotation,
    server_version,
    write_json,
)

SIZES = (10, 1_000)
TARGETS = {"sqlite": 1.5, "postgresql": 1.0}  # DjangoSession / the SDK's session, every row
OVERHEAD_TARGET = 12.0  # the cycle's app overhead / one port upsert (PostgreSQL)
APPROVE = {"approved": True}


def items(n: int, salt: str) -> list[dict[str, Any]]:
    """``n`` chat messages of about 200 bytes, users and assistants in turn."""
    body = (salt + "-" + "lorem ipsum dolor sit amet " * 8)[:200]
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"{i}: {body}"} for i in range(n)]


# -- sessions ---------------------------------------------------------------------------------------


@dataclass
class SessionContender:
    name: str
    make: Callable[[str], Any]  # session id -> a session
    add: dict[int, list[float]] = field(default_factory=dict)  # size -> per-round median, ms
    get: dict[int, list[float]] = field(default_factory=dict)


def session_contenders(target: Any) -> tuple[list[SessionContender], Callable[[], None]]:
    from agents.memory import SQLiteSession

    from turnstate_app.contrib.openai_agents import DjangoSession

    ours = SessionContender("DjangoSession", DjangoSession)
    if target.vendor == "sqlite":
        path = os.path.join(target.tmpdir, "sdk-sessions.sqlite3")
        opened: list[Any] = []

        def sqlite_session(session_id: str) -> Any:
            session = SQLiteSession(session_id, db_path=path)
            opened.append(session)
            return session

        def close() -> None:
            for session in opened:
                session.close()

        return [ours, SessionContender("SQLiteSession", sqlite_session)], close
    from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
    from sqlalchemy.ext.asyncio import create_async_engine

    db = target.django_db
    url = f"postgresql+psycopg://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"
    engine = create_async_engine(url, pool_size=1)

    def sqlalchemy_session(session_id: str) -> Any:
        return SQLAlchemySession(session_id, engine=engine, create_tables=True)

    return [ours, SessionContender("SQLAlchemySession", sqlalchemy_session)], lambda: None


async def session_round(contenders: list[SessionContender], round_no: int, calls: dict[int, int]) -> None:
    clock = time.perf_counter_ns
    for size, n in calls.items():
        add: dict[str, list[int]] = {c.name: [] for c in contenders}
        get: dict[str, list[int]] = {c.name: [] for c in contenders}
        for call in range(n):
            for contender in rotation(contenders, call, round_no):
                session = contender.make(f"bench-{uuid.uuid4().hex[:12]}")
                batch = items(size, session.session_id)
                start = clock()
                await session.add_items(batch)
                add[contender.name].append(clock() - start)
                start = clock()
                got = await session.get_items()
                get[contender.name].append(clock() - start)
                if got != batch:
                    raise SystemExit(
                        f"{contender.name}: get_items read back {len(got)} items, not the {size} added"
                    )
        for contender in contenders:
            contender.add.setdefault(size, []).append(median(add[contender.name]) / 1e6)
            contender.get.setdefault(size, []).append(median(get[contender.name]) / 1e6)


# -- the approval cycle -----------------------------------------------------------------------------


def payments_agent() -> Any:
    """Two tools needing approval, on the SDK's ``ScriptedModel``: the first turn calls both, the next
    one answers."""
    from agents import Agent, function_tool
    from agents.testing import ScriptedModel, assistant_message, function_call

    class ByInput(ScriptedModel):
        async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> Any:
            answered = any(isinstance(i, dict) and i.get("type") == "function_call_output" for i in input)
            calls = [
                function_call("pay", {"amount": 2400, "to": "acme"}, call_id="c-pay"),
                function_call("notify", {"to": "finance"}, call_id="c-notify"),
            ]
            self.enqueue([assistant_message("done")] if answered else calls)
            return await super().get_response(system_instructions, input, *args, **kwargs)

    @function_tool(needs_approval=True)
    def pay(amount: int, to: str) -> str:
        """Pay."""
        return f"paid {amount} to {to}"

    @function_tool(needs_approval=True)
    def notify(to: str) -> str:
        """Notify."""
        return f"told {to}"

    return Agent(name="payments", model=ByInput(), tools=[pay, notify])


@dataclass
class Counted:
    statements: int = 0
    writes_outside_transactions: int = 0
    commits: int = 0
    by_phase: dict[str, int] = field(default_factory=dict)
    """Statements of each part of the cycle (pause, answer, continue) on every connection and thread,
    transaction control (BEGIN, COMMIT, ROLLBACK) left out, savepoints kept; the tools' own left out."""
    phase: str = ""


class Timed:
    """Wraps the SDK's ``Runner`` and ``RunState`` as ``continue_run`` sees them: their time is the SDK's.

    That is the run, the state's serialising and rebuilding, and the calls on the rebuilt state that
    apply the answers (``approve``, ``reject``, and ``get_interruptions`` listing what they apply to:
    the SDK resolves and copies each pending call on every one of them), counted apart in
    ``answers_ns`` too, so the overhead as it was first reported is ``overhead + answers``."""

    def __init__(self) -> None:
        self.sdk_ns = 0
        self.answers_ns = 0

    def timed_method(self, state: Any, name: str) -> None:
        """``state.<name>`` timed as the SDK's, as applying an answer."""
        real = getattr(state, name)
        outer = self

        def method(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter_ns()
            try:
                return real(*args, **kwargs)
            finally:
                spent = time.perf_counter_ns() - start
                outer.sdk_ns += spent
                outer.answers_ns += spent

        setattr(state, name, method)

    def runner(self, real: Any) -> Any:
        outer = self

        class Runner:
            @staticmethod
            async def run(*args: Any, **kwargs: Any) -> Any:
                start = time.perf_counter_ns()
                result = await real.run(*args, **kwargs)
                middle = time.perf_counter_ns()
                result.to_state().to_json()  # what the continuation does next, timed here once more
                outer.sdk_ns += (middle - start) + 2 * (time.perf_counter_ns() - middle)
                return result

        return Runner

    def run_state(self, real: Any) -> Any:
        outer = self

        class RunState:
            @staticmethod
            async def from_string(*args: Any, **kwargs: Any) -> Any:
                start = time.perf_counter_ns()
                state = await real.from_string(*args, **kwargs)
                outer.sdk_ns += time.perf_counter_ns() - start
                for name in ("approve", "reject", "get_interruptions"):
                    outer.timed_method(state, name)
                return state

        return RunState


def cycle(agent: Any, timed: Timed, counted: Counted, waiting_counted: Counted) -> dict[str, float]:
    """One approval cycle; milliseconds of each part, the SDK's apart. The first answer's
    ``continue_run`` (a worker gets one per answer; it finds the group incomplete) is timed and
    counted apart (``waiting_counted``), outside the overhead."""
    from agents import Runner

    from turnstate_app.contrib.openai_agents import continue_run, pause_approvals
    from turnstate_app.pauses import resume_pause

    clock = time.perf_counter_ns
    start = clock()
    result = Runner.run_sync(agent, "Pay acme 2400 and tell finance.")
    first_run = clock() - start
    start = clock()
    paused_state = result.to_state().to_json()
    to_state = clock() - start
    timed.sdk_ns = timed.answers_ns = 0
    with counting(counted):
        counted.phase = "pause"
        start = clock()
        pauses = pause_approvals(result, agent=agent, run_id=f"bench-run-{uuid.uuid4().hex}", session_id=None)
        pause = clock() - start
        counted.phase = "answer both"
        start = clock()
        first = resume_pause(pauses[0].token, APPROVE)
        answer = clock() - start
    with counting(waiting_counted):
        waiting_counted.phase = "first answer's continue"
        start = clock()
        waiting = continue_run(agent, first)
        incomplete = clock() - start
    with counting(counted):
        start = clock()
        answered = [first] + [resume_pause(minted.token, APPROVE) for minted in pauses[1:]]
        answer += clock() - start
        counted.phase = "continue"
        start = clock()
        outcome = continue_run(agent, answered[-1])
        resume = clock() - start
    if not outcome.ran or outcome.output != "done":
        raise SystemExit(f"the cycle did not continue: {outcome}")
    if waiting.ran or waiting.reason != "group incomplete":
        raise SystemExit(f"the first answer's continuation did not wait for the group: {waiting}")
    overhead = (pause - to_state) + answer + (resume - timed.sdk_ns)
    return {
        "agent_first_run_ms": first_run / 1e6,
        "sdk_to_state_ms": to_state / 1e6,
        "sdk_in_continue_ms": timed.sdk_ns / 1e6,
        "sdk_applying_answers_ms": timed.answers_ns / 1e6,
        "pause_ms": pause / 1e6,
        "answer_both_ms": answer / 1e6,
        "continue_ms": resume / 1e6,
        "first_answer_continue_ms": incomplete / 1e6,
        "app_overhead_ms": overhead / 1e6,
        "app_overhead_with_answers_ms": (overhead + timed.answers_ns) / 1e6,
        "paused_state_chars": float(len(json.dumps(paused_state))),
    }


TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "ROLLBACK")


class counting:  # noqa: N801 - used as a context manager, named as one
    """Statements through Django's connections, every one and on every thread (those opened meanwhile
    too), and commits of the default connection: each outermost ``atomic`` that commits, and each write
    sent outside a transaction (autocommit)."""

    def __init__(self, counted: Counted) -> None:
        self.counted = counted

    def wrapper(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        counted = self.counted
        verb = sql.lstrip().split(" ", 1)[0].upper()
        if verb not in TRANSACTION_CONTROL:
            counted.statements += 1
            counted.by_phase[counted.phase] = counted.by_phase.get(counted.phase, 0) + 1
        if verb in {"INSERT", "UPDATE", "DELETE"} and not context["connection"].in_atomic_block:
            counted.writes_outside_transactions += 1
        return execute(sql, params, many, context)

    def attach(self, connection: Any, **_: Any) -> None:
        if self.wrapper not in connection.execute_wrappers:
            connection.execute_wrappers.append(self.wrapper)

    def __enter__(self) -> None:
        from django.db import connection, connections
        from django.db.backends.signals import connection_created

        counted = self.counted
        real_commit = connection.commit

        def commit() -> None:
            counted.commits += 1
            real_commit()

        connection.commit = commit  # type: ignore[method-assign]
        connection_created.connect(self.attach)
        for opened in connections.all(initialized_only=True):
            self.attach(opened)

    def __exit__(self, *exc: Any) -> None:
        from django.db import connection, connections
        from django.db.backends.signals import connection_created

        connection_created.disconnect(self.attach)
        for opened in connections.all(initialized_only=True):
            if self.wrapper in opened.execute_wrappers:
                opened.execute_wrappers.remove(self.wrapper)
        del connection.commit


def port_upserts(n: int) -> list[int]:
    from turnstate_app.ports import ModelCheckpointCommandPort

    port = ModelCheckpointCommandPort()
    value = json.dumps({"question": "Pay acme 2400?", "padding": "x" * 200})
    clock = time.perf_counter_ns
    samples = []
    for i in range(n):
        start = clock()
        port.write_metadata_sync(
            thread_id=f"bench-port-{i % 50}", checkpoint_id="cp", key="k", value=value, task_id="t"
        )
        samples.append(clock() - start)
    return samples


# -- report -----------------------------------------------------------------------------------------


def render_sessions(contenders: list[SessionContender], vendor: str) -> tuple[str, list[dict[str, Any]]]:
    ours, theirs = contenders
    lines = [
        f"{'operation':<22} {'DjangoSession ms':>17} {theirs.name + ' ms':>21} {'ratio':>7} {'target':>7}",
    ]
    rows = []
    for size in SIZES:
        for op in ("add", "get"):
            a = median(getattr(ours, op)[size])
            b = median(getattr(theirs, op)[size])
            label = f"{op}_items, {size} items"
            ratio = a / b
            lines.append(f"{label:<22} {a:>17.3f} {b:>21.3f} {ratio:>6.2f}x {TARGETS[vendor]:>6.1f}x")
            rows.append(
                {"operation": label, "ours_ms": a, "theirs": theirs.name, "theirs_ms": b, "ratio": ratio}
            )
    return "\n".join(lines), rows


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for dist in ("openai-agents", "openai", "sqlalchemy", "psycopg"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[dist] = None
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument(
        "--database", default="sqlite", help="sqlite or a postgres:// URL of the bench's own database"
    )
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds (after one warm-up round)")
    parser.add_argument(
        "--calls", default="20,5", help="sessions per contender per round, one count per size"
    )
    parser.add_argument("--cycles", type=int, default=20, help="approval cycles timed")
    parser.add_argument(
        "--cycle-only",
        action="store_true",
        help="measure the approval cycle alone (no sessions: the SDK's sessions need the bench extra)",
    )
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    calls = dict(zip(SIZES, (int(n) for n in args.calls.split(",")), strict=True))
    target = make_target(args.database)
    if target.vendor == "postgresql":
        ensure_postgres_database(target.conninfo)
    elif target.vendor != "sqlite":
        raise SystemExit("bench/openai_agents.py measures SQLite and PostgreSQL")
    configure_django(target, extra_apps=["turnstate_app.contrib.openai_agents"])
    from agents import set_tracing_disabled
    from asgiref.sync import sync_to_async
    from django.db import connections

    import turnstate_app.contrib.openai_agents.continuing as continuing

    set_tracing_disabled(True)
    env = environment(target, server_version(target), args)
    env["packages"] = versions()
    started = time.monotonic()

    loop = asyncio.new_event_loop()
    sessions_table = "(not measured: --cycle-only)"
    session_rows: list[dict[str, Any]] = []
    if not args.cycle_only:
        contenders, close = session_contenders(target)
        loop.run_until_complete(session_round(contenders, 0, dict.fromkeys(SIZES, 2)))  # warm-up
        for contender in contenders:
            contender.add.clear()
            contender.get.clear()
        for round_no in range(args.repeat):
            loop.run_until_complete(session_round(contenders, round_no, calls))
            print(
                f"sessions: round {round_no + 1}/{args.repeat} ({time.monotonic() - started:.0f}s)",
                flush=True,
            )
        loop.run_until_complete(sync_to_async(connections.close_all, thread_sensitive=True)())
        close()
        sessions_table, session_rows = render_sessions(contenders, target.vendor)

    timed = Timed()
    continuing.Runner = timed.runner(continuing.Runner)  # type: ignore[attr-defined,misc]
    continuing.RunState = timed.run_state(continuing.RunState)  # type: ignore[attr-defined,misc]
    agent = payments_agent()
    cycle(agent, timed, Counted(), Counted())  # warm-up
    port_upserts(20)
    parts: dict[str, list[float]] = {}
    upserts: list[int] = []
    counted, waiting_counted = Counted(), Counted()
    for i in range(args.cycles):
        counts = (counted, waiting_counted) if i == 0 else (Counted(), Counted())
        for name, value in cycle(agent, timed, *counts).items():
            parts.setdefault(name, []).append(value)
        upserts += port_upserts(10)
    from turnstate_app.contrib.openai_agents.models import StoredRunState

    state_chars = [len(s) for s in StoredRunState.objects.values_list("state", flat=True)]
    upsert_ms = median(upserts) / 1e6
    cycle_medians = {name: median(values) for name, values in parts.items()}
    ratio = cycle_medians["app_overhead_ms"] / upsert_ms
    finish_environment(env, started)

    lines = [
        f"{env['database_server'].split(' on ')[0]} | Django {env['django']} | openai-agents "
        f"{env['packages']['openai-agents']} | sqlalchemy {env['packages']['sqlalchemy']} | "
        f"{env['cpu_count']} CPUs",
        "",
        "sessions (median call, ms; ratio = DjangoSession / the SDK's session)",
        sessions_table,
        "",
        f"one approval cycle, two approvals (median of {args.cycles}, ms)",
    ]
    lines += [f"  {name:<26} {value:>9.3f}" for name, value in cycle_medians.items()]
    lines += [
        f"  {'one port upsert':<26} {upsert_ms:>9.3f}",
        f"  app overhead / one port upsert: {ratio:.1f}x (target {OVERHEAD_TARGET:.0f}x on PostgreSQL); "
        f"{cycle_medians['app_overhead_with_answers_ms'] / upsert_ms:.1f}x "
        "with the SDK's applying of the answers counted in",
        f"  statements {counted.statements} ("
        + ", ".join(f"{phase} {n}" for phase, n in counted.by_phase.items())
        + f"), commits {counted.commits} + {counted.writes_outside_transactions} autocommit writes",
        f"  the first answer's continue_run (group incomplete, not in the overhead): "
        f"{cycle_medians['first_answer_continue_ms'] / upsert_ms:.1f}x one port upsert, "
        f"{waiting_counted.statements} statements, "
        f"{waiting_counted.writes_outside_transactions} autocommit writes",
        f"  the state row: {cycle_medians['paused_state_chars']:.0f} characters paused with two approvals, "
        f"{max(state_chars)} once continued to the end",
    ]
    table = "\n".join(lines)
    print(table)
    write_json(
        args.output or RESULTS_DIR / f"openai-agents-{target.vendor}.json",
        {
            "environment": env,
            "sessions": session_rows,
            "cycle_ms": cycle_medians,
            "port_upsert_ms": upsert_ms,
            "overhead_per_upsert": ratio,
            "cycle_statements": {name: value for name, value in vars(counted).items() if name != "phase"},
            "first_answer_continue_statements": {
                name: value for name, value in vars(waiting_counted).items() if name != "phase"
            },
            "state_chars": {"min": min(state_chars), "max": max(state_chars)},
            "table": table,
        },
    )
    connections.close_all()
    loop.close()
    if target.tmpdir:
        shutil.rmtree(target.tmpdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
