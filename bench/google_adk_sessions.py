#!/usr/bin/env python
"""The Google ADK contrib's ``DjangoSessionService`` beside ADK's own ``DatabaseSessionService``.

Each contender, awaited as ADK's runner awaits it: ``create_session`` (state of every scope),
``append_event`` of 10 and of 1,000 events to a fresh session (a user's or a model's text of about
200 bytes, each with a session-state delta, every tenth one a user-state delta too), ``get_session``
of those 10 and 1,000 events, and ``list_sessions`` of a user with 20 sessions. ADK's service runs
on the same database server as Django: on PostgreSQL the same database (``postgresql+psycopg``,
built from the URL as ADK builds it, with its defaults), on SQLite a file of its own in the same
temporary directory, switched to the pragmas Django's connection uses (WAL, ``synchronous=NORMAL``)
so neither side gains from its journal. The contenders take turns in a rotating order; each row is
the median of the rounds' medians, with its ratio to ADK's service (ours / theirs) and the
statements one call of ours sends.

A benchmark, not a test: it prints a table, writes ``bench/results/google-adk-sessions-<vendor>.json``
and exits 0. Needs the ``google-adk`` and ``bench`` extras. From the repository root::

    .venv/bin/python bench/google_adk_sessions.py --database sqlite
    .venv/bin/python bench/google_adk_sessions.py --database postgres://postgres@127.0.0.1:5432/turnstate_bench_adk
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
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
LISTED = 20  # sessions of the user whose sessions are listed
TARGETS = {"sqlite": 1.5, "postgresql": 1.0}  # DjangoSessionService / DatabaseSessionService, every row
OPERATIONS = (
    "create_session",
    "append_event x10 (total)",
    "get_session, 10 events",
    "append_event x1000 (total)",
    "get_session, 1000 events",
    f"list_sessions, {LISTED} sessions",
)


@dataclass
class Contender:
    name: str
    service: Any
    samples: dict[str, list[float]] = field(default_factory=dict)  # operation -> per-round medians, ms


def events(n: int, salt: str) -> list[Any]:
    """``n`` events of about 200 bytes of text, user and model in turn, each with a state delta."""
    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions
    from google.genai import types

    body = (salt + "-" + "lorem ipsum dolor sit amet " * 8)[:200]
    made = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "model"
        delta: dict[str, Any] = {"turn": i}
        if i % 10 == 9:
            delta["user:turns"] = i
        made.append(
            Event(
                invocation_id=f"inv-{i // 2}",
                author="user" if role == "user" else "assistant",
                content=types.Content(role=role, parts=[types.Part(text=f"{i}: {body}")]),
                actions=EventActions(state_delta=delta),
            )
        )
    return made


async def timed(call: Awaitable[Any]) -> tuple[float, Any]:
    start = time.perf_counter_ns()
    result = await call
    return (time.perf_counter_ns() - start) / 1e6, result


async def one_round(contenders: list[Contender], round_no: int, calls: dict[int, int]) -> None:
    per_call: dict[str, dict[str, list[float]]] = {c.name: {op: [] for op in OPERATIONS} for c in contenders}
    for size, n in calls.items():
        for call in range(n):
            for contender in rotation(contenders, call, round_no):
                service, seen = contender.service, per_call[contender.name]
                app = f"bench-{uuid.uuid4().hex[:10]}"
                state = {"topic": "trip", "user:lang": "fr", "app:plan": "gold"}
                ms, session = await timed(service.create_session(app_name=app, user_id="ann", state=state))
                seen["create_session"].append(ms)
                start = time.perf_counter_ns()
                for each in events(size, app):
                    await service.append_event(session, each)
                seen[f"append_event x{size} (total)"].append((time.perf_counter_ns() - start) / 1e6)
                ms, got = await timed(service.get_session(app_name=app, user_id="ann", session_id=session.id))
                seen[f"get_session, {size} events"].append(ms)
                if len(got.events) != size or got.state["turn"] != size - 1:
                    raise SystemExit(f"{contender.name}: get_session read back {len(got.events)} events")
    for contender in rotation(contenders, 0, round_no):
        service, seen = contender.service, per_call[contender.name]
        app = f"bench-{uuid.uuid4().hex[:10]}"
        for _ in range(LISTED):
            await service.create_session(
                app_name=app, user_id="ann", state={"topic": "trip", "user:lang": "fr"}
            )
        for _ in range(5):
            ms, listed = await timed(service.list_sessions(app_name=app, user_id="ann"))
            seen[f"list_sessions, {LISTED} sessions"].append(ms)
            if len(listed.sessions) != LISTED:
                raise SystemExit(f"{contender.name}: list_sessions listed {len(listed.sessions)} sessions")
    for contender in contenders:
        for op, values in per_call[contender.name].items():
            if values:
                contender.samples.setdefault(op, []).append(median(values))


def adk_service(target: Any) -> Any:
    """ADK's ``DatabaseSessionService`` on the bench's server, built from a URL as ADK builds it."""
    from google.adk.sessions.database_session_service import DatabaseSessionService
    from sqlalchemy import event

    if target.vendor == "sqlite":
        service = DatabaseSessionService(f"sqlite+aiosqlite:///{os.path.join(target.tmpdir, 'adk.sqlite3')}")

        def pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

        event.listen(service.db_engine.sync_engine, "connect", pragmas)
        return service
    db = target.django_db
    password = f":{db['PASSWORD']}" if db["PASSWORD"] else ""
    url = f"postgresql+psycopg://{db['USER']}{password}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"
    return DatabaseSessionService(url)


def statements_per_call() -> dict[str, int]:
    """The statements one call of ours sends (transaction control left out), on a session of 10 events."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from turnstate_app.contrib.google_adk import DjangoSessionService

    service = DjangoSessionService()
    app = f"bench-{uuid.uuid4().hex[:10]}"
    ids: dict[str, Any] = {"app_name": app, "user_id": "ann"}

    def count(call: Callable[[], Any]) -> tuple[int, Any]:
        with CaptureQueriesContext(connection) as seen:
            result = call()
        sent = [q["sql"] for q in seen.captured_queries]
        return len([s for s in sent if s.split(None, 1)[0].upper() not in ("BEGIN", "COMMIT")]), result

    counts: dict[str, int] = {}
    service.create_session_sync(**ids, state={"user:lang": "fr", "app:plan": "gold"})
    counts["create_session"], session = count(
        lambda: service.create_session_sync(
            **ids, state={"topic": "trip", "user:lang": "fr", "app:plan": "gold"}
        )
    )
    made = events(10, app)
    counts["append_event"], session.last_update_time = count(
        lambda: service.store_event_sync(session, made[0])
    )
    for each in made[1:9]:
        session.last_update_time = service.store_event_sync(session, each)
    counts["append_event, user delta"], _ = count(lambda: service.store_event_sync(session, made[9]))
    counts["get_session"], _ = count(lambda: service.get_session_sync(**ids, session_id=session.id))
    counts["list_sessions"], _ = count(lambda: service.list_sessions_sync(**ids))
    return counts


def render(
    contenders: list[Contender], vendor: str, counts: dict[str, int]
) -> tuple[str, list[dict[str, Any]]]:
    ours, theirs = contenders
    lines = [
        f"{'operation':<30} {'ours ms':>10} {'ADK ms':>10} {'ratio':>7} {'target':>7}",
    ]
    rows = []
    for op in OPERATIONS:
        a, b = median(ours.samples[op]), median(theirs.samples[op])
        ratio = a / b
        lines.append(f"{op:<30} {a:>10.3f} {b:>10.3f} {ratio:>6.2f}x {TARGETS[vendor]:>6.1f}x")
        rows.append({"operation": op, "ours_ms": a, "adk_ms": b, "ratio": ratio, "target": TARGETS[vendor]})
    lines.append("statements per call of ours: " + ", ".join(f"{op} {n}" for op, n in counts.items()))
    return "\n".join(lines), rows


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for dist in ("google-adk", "sqlalchemy", "aiosqlite", "psycopg"):
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
        "--calls", default="10,1", help="sessions per contender per round, one count per size"
    )
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    calls = dict(zip(SIZES, (int(n) for n in args.calls.split(",")), strict=True))
    target = make_target(args.database)
    if target.vendor == "postgresql":
        ensure_postgres_database(target.conninfo)
    elif target.vendor != "sqlite":
        raise SystemExit("bench/google_adk_sessions.py measures SQLite and PostgreSQL")
    configure_django(target, extra_apps=["turnstate_app.contrib.google_adk"])
    from asgiref.sync import sync_to_async
    from django.db import connections

    from turnstate_app.contrib.google_adk import DjangoSessionService

    env = environment(target, server_version(target), args)
    env["packages"] = versions()
    started = time.monotonic()
    theirs = adk_service(target)
    contenders = [
        Contender("DjangoSessionService", DjangoSessionService()),
        Contender("DatabaseSessionService", theirs),
    ]
    loop = asyncio.new_event_loop()
    loop.run_until_complete(one_round(contenders, 0, {10: 2, 1_000: 0}))  # warm-up (ADK creates its tables)
    for contender in contenders:
        contender.samples.clear()
    for round_no in range(args.repeat):
        loop.run_until_complete(one_round(contenders, round_no, calls))
        print(f"round {round_no + 1}/{args.repeat} ({time.monotonic() - started:.0f}s)", flush=True)
    loop.run_until_complete(sync_to_async(connections.close_all, thread_sensitive=True)())
    loop.run_until_complete(theirs.close())
    loop.close()
    counts = statements_per_call()
    finish_environment(env, started)
    table, rows = render(contenders, target.vendor, counts)
    header = (
        f"{env['database_server'].split(' on ')[0]} | Django {env['django']} | google-adk "
        f"{env['packages']['google-adk']} | sqlalchemy {env['packages']['sqlalchemy']} | "
        f"{env['cpu_count']} CPUs"
    )
    ratio = "ratio = DjangoSessionService / DatabaseSessionService"
    table = f"{header}\n\nmedian call, ms, {args.repeat} rounds; {ratio}\n{table}"
    print(table)
    write_json(
        args.output or RESULTS_DIR / f"google-adk-sessions-{target.vendor}.json",
        {"environment": env, "rows": rows, "statements_per_call": counts, "table": table},
    )
    connections.close_all()
    if target.tmpdir:
        shutil.rmtree(target.tmpdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
