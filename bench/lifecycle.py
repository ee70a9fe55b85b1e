#!/usr/bin/env python
"""``mint_pause``, ``resume_pause`` and ``continue_once``: latency as a multiple of one port upsert, and
statement counts.

Minting writes the request, the turn state and the ledger row and signs a token; resuming checks
the token, the ledger and the stored turn, then consumes the pause in one transaction and stores
the answer. Each is measured beside one ``write_metadata_sync`` upsert (the unit), the raw driver
running the port's upsert (the floor) and the REST resume endpoint (``POST pauses/resume/``
through DRF's ``APIClient`` with token authentication, in-process), interleaved in the same run,
so the multiples hold on a noisy machine. Statement counts come from ``CaptureQueriesContext``
(data statements: no BEGIN, COMMIT, SAVEPOINT or RELEASE) and from the database itself: libpq's
protocol trace on PostgreSQL, SQLite's trace callback, MariaDB's session status counters.

A benchmark, not a test: it prints a table, writes ``bench/results/lifecycle-<vendor>.json`` and
exits 0. Run it from the repository root::

    .venv/bin/python bench/lifecycle.py --database sqlite
    .venv/bin/python bench/lifecycle.py --database postgres://postgres@127.0.0.1:5432/turnstate_bench_lc
    .venv/bin/python bench/lifecycle.py --database mysql://root@127.0.0.1:3306/turnstate_bench_lc
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
    RESULTS_DIR,
    SQL_WRITE,
    Target,
    check_statements,
    configure_django,
    ensure_mysql_database,
    ensure_postgres_database,
    environment,
    finish_environment,
    make_target,
    make_transcript,
    make_values,
    median,
    mysql_statement_counts,
    pg_protocol_counts,
    qmark,
    rotation,
    server_version,
    sqlite_connect,
    sqlite_statement_counts,
    summary_us,
    timed_sync,
    us,
    write_json,
)

DEFAULT_PG_URL = "postgres://postgres@127.0.0.1:5432/turnstate_bench_lc"
TABLES = ("turnstate_app_checkpointmetadata", "turnstate_app_pause")
OPS = ("floor", "upsert", "floor_mint", "mint", "resume", "continue", "rest", "rest_noop")
LABELS = {
    "floor": "floor upsert (raw driver)",
    "upsert": "port upsert (the unit)",
    "floor_mint": "floor mint (raw driver)",
    "mint": "mint_pause",
    "resume": "resume_pause",
    "continue": "continue_once (lone pause)",
    "rest": "REST POST pauses/resume/",
    "rest_noop": "DRF no-op POST (same auth)",
}
RESUME_URL = "/api/turnstate/pauses/resume/"
NOOP_URL = "/bench/noop/"
COUNTS_NOTE = {
    "postgresql": "db stmts, round trips and commits = libpq's\n"
    "protocol trace (BEGIN and COMMIT included).\n",
    "sqlite": "db stmts and commits = SQLite's trace\n"
    "callback (BEGIN and COMMIT included; in-process, so no round trips).\n",
    "mysql": "round trips = the session's Questions (SET autocommit\n"
    "included), commits = its Com_commit, or its writes when it sent no COMMIT (autocommit).\n",
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
    rest_tokens: deque[str]
    client: Any = None  # DRF's APIClient, authenticated with a token
    floor_mint: Callable[[int], object] | None = None
    counter: int = 0
    answered: deque[Any] = field(default_factory=deque)  # ResumedPause, for continue_once

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
            params = ("bench-floor", "cp", key, value, None, FLOOR_MAC, "bench-task", now, now)
            cur.execute(SQL_WRITE, params, prepare=True)

        return pg_upsert, conn.close, conn
    if target.vendor == "mysql":
        import MySQLdb

        from turnstate_app.ports.packets import to_wire
        from turnstate_app.ports.statements import statements_for

        assert target.mysql is not None
        my = MySQLdb.connect(**target.mysql, autocommit=True)
        my_cur = my.cursor()
        my_sql = statements_for("default").write

        def mysql_upsert(key: str, value: str) -> None:
            now = datetime.now(UTC).replace(tzinfo=None).isoformat(" ")
            wire = to_wire(value)  # as the port sends a value to MariaDB/MySQL
            my_cur.execute(my_sql, ("bench-floor", "cp", key, wire, None, FLOOR_MAC, "bench-task", now, now))

        return mysql_upsert, my.close, my
    lite = sqlite_connect(target.sqlite_path)
    lite_cur = lite.cursor()
    sql = qmark(SQL_WRITE)

    def sqlite_upsert(key: str, value: str) -> None:
        now = str(datetime.now(UTC).replace(tzinfo=None))
        lite_cur.execute(sql, ("bench-floor", "cp", key, value, None, FLOOR_MAC, "bench-task", now, now))

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


def op_mint(bench: Bench, tokens: deque[str] | None = None) -> Callable[[], object]:
    def call() -> None:
        minted = mint(bench)
        if not minted.resumable:
            raise SystemExit("mint_pause recorded no turn state: the store is not wired to the model port")
        (bench.tokens if tokens is None else tokens).append(minted.token)

    return call


def op_resume(bench: Bench) -> Callable[[], object]:
    from turnstate_app.pauses import resume_pause

    token = bench.tokens.popleft()

    def call() -> None:
        resumed = resume_pause(token, ANSWER)
        if resumed.checkpoint is None or resumed.checkpoint.messages != bench.messages:
            raise SystemExit("resume_pause did not give back the recorded turn")

    return call


def answer_one(bench: Bench) -> None:
    """A pause minted and answered (untimed), for :func:`op_continue`."""
    from turnstate_app.pauses import resume_pause

    bench.answered.append(resume_pause(mint(bench).token, ANSWER))


def op_continue(bench: Bench) -> Callable[[], object]:
    """A continuation of a lone answered pause whose run does nothing: what the lifecycle costs
    around a run (the claim, the thread's turn, the completion)."""
    from turnstate_app.pauses import continue_once

    resumed = bench.answered.popleft()

    def call() -> None:
        if not continue_once(resumed, lambda continuation: None).ran:
            raise SystemExit("continue_once did not run the continuation")

    return call


def op_rest(bench: Bench) -> Callable[[], object]:
    """The endpoint a person's answer arrives at: DRF's parsing, authentication, serializer, view."""
    token = bench.rest_tokens.popleft()
    body = {"token": token, "answer": ANSWER}

    def call() -> None:
        response = bench.client.post(RESUME_URL, body, format="json")
        if response.status_code != 200 or not response.json().get("resumable"):
            raise SystemExit(f"POST {RESUME_URL} answered {response.status_code}: {response.content!r}")

    return call


def op_rest_noop(bench: Bench) -> Callable[[], object]:
    """What any DRF endpoint costs here: the same client, token authentication, permission, JSON
    parsing and rendering around a view that does nothing. The REST resume cannot cost less."""
    body = {"token": "t" * 120, "answer": ANSWER}

    def call() -> None:
        response = bench.client.post(NOOP_URL, body, format="json")
        if response.status_code != 200:
            raise SystemExit(f"POST {NOOP_URL} answered {response.status_code}: {response.content!r}")

    return call


def make_floor_mint(bench: Bench, driver: Any) -> Callable[[int], object]:
    """A mint's own statements, as one mint sent them, replayed on the floor's raw connection.

    One mint is captured through Django (its SQL and parameters); each call replays those
    statements for a new thread and pause id in one transaction, the way the app's fast path
    sends them: on PostgreSQL BEGIN, the writes and COMMIT in one pipeline, prepared; on
    SQLite ``BEGIN IMMEDIATE`` ... ``COMMIT``; on MariaDB the writes and COMMIT. What
    ``mint_pause`` costs beyond this is Python: checks, encoding, the ledger row, the token.
    """
    from django.db import connection

    captured: list[tuple[str, tuple[Any, ...]]] = []

    def capture(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if sql.lstrip().upper().startswith(("INSERT", "UPDATE", "WITH")):
            captured.append((sql, tuple(params)))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        minted = mint(bench)
    assert len(captured) == 3, captured
    old = (minted.claims.thread_id, minted.claims.jti)
    vendor = bench.target.vendor

    def statements(i: int) -> list[tuple[str, tuple[Any, ...]]]:
        new = {old[0]: f"bench-floor-mint-{i:07d}", old[1]: f"floor-jti-{i:07d}"}
        return [(sql, tuple(new.get(p, p) if isinstance(p, str) else p for p in ps)) for sql, ps in captured]

    if vendor == "postgresql":
        cursors = [driver.cursor() for _ in captured]

        def pg_mint(i: int) -> None:
            with driver.pipeline():
                driver.execute("BEGIN")
                for cur, (sql, params) in zip(cursors, statements(i), strict=True):
                    cur.execute(sql, params, prepare=True)
                driver.execute("COMMIT")

        return pg_mint
    cur = driver.cursor()
    if vendor == "sqlite":

        def sqlite_mint(i: int) -> None:
            cur.execute("BEGIN IMMEDIATE")
            for sql, params in statements(i):
                cur.execute(qmark(sql), params)
            cur.execute("COMMIT")

        return sqlite_mint

    def mysql_mint(i: int) -> None:
        driver.autocommit(False)
        for sql, params in statements(i):
            cur.execute(sql, params)
        driver.commit()
        driver.autocommit(True)

    return mysql_mint


def op_floor_mint(bench: Bench) -> Callable[[], object]:
    assert bench.floor_mint is not None
    i, replay = bench.next_id(), bench.floor_mint
    return lambda: replay(i)


BUILDERS: dict[str, Callable[[Bench], Callable[[], object]]] = {
    "floor": op_floor,
    "upsert": op_upsert,
    "floor_mint": op_floor_mint,
    "mint": op_mint,
    "resume": op_resume,
    "continue": op_continue,
    "rest": op_rest,
    "rest_noop": op_rest_noop,
}


def rest_client() -> Any:
    """DRF's test client, authenticated as the bench's user by a ``rest_framework.authtoken`` token."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    user, _ = get_user_model().objects.get_or_create(username="bench-answerer")
    token, _ = Token.objects.get_or_create(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


URLCONF = "bench_lifecycle_urls"


def install_urls() -> None:
    """The app's URLs where the README mounts them, as the module ``ROOT_URLCONF`` names."""
    import types

    from django.urls import include, path
    from rest_framework.permissions import IsAuthenticated
    from rest_framework.request import Request
    from rest_framework.response import Response
    from rest_framework.views import APIView

    class NoopView(APIView):
        permission_classes = [IsAuthenticated]

        def post(self, request: Request) -> Response:
            request.data  # noqa: B018 - parsed, as the resume endpoint parses its body
            return Response({"jti": "x", "answer": ANSWER, "resumable": True})

    module = types.ModuleType(URLCONF)
    module.urlpatterns = [  # type: ignore[attr-defined]
        path("api/turnstate/", include("turnstate_app.urls")),
        path(NOOP_URL.strip("/") + "/", NoopView.as_view()),
    ]
    sys.modules[URLCONF] = module


def run_round(bench: Bench, round_no: int, n: int, chunk: int) -> dict[str, list[int]]:
    """Each operation n times, taking turns in chunks; resume consumes tokens minted earlier."""
    truncate(bench.target)
    bench.tokens.clear()
    bench.rest_tokens.clear()
    bench.answered.clear()
    for _ in range(n):  # tokens for the REST resume, minted outside its timing
        op_mint(bench, bench.rest_tokens)()
    for _ in range(n):  # answered pauses to continue, minted and answered outside its timing
        answer_one(bench)
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

    quote = connection.ops.quote_name
    with connection.cursor() as cur:
        if target.vendor == "postgresql":
            cur.execute("TRUNCATE " + ", ".join(quote(t) for t in TABLES))
        else:
            for table in TABLES:
                cur.execute(f"DELETE FROM {quote(table)}")
    if target.vendor == "postgresql":
        with connection.cursor() as cur:
            for table in TABLES:
                cur.execute(f'ANALYZE "{table}"')


# -- statement counts and profile ---------------------------------------------------------------------


def statement_counts(bench: Bench) -> dict[str, Any]:
    """The statements one warm call of each operation sends, as Django logs them and as the database saw them.

    PostgreSQL: libpq's protocol trace (statements, round trips, commits). SQLite: its trace
    callback (statements the engine ran, commits; no round trips in-process). MariaDB/MySQL:
    the session's status counters (statements sent, each a round trip; commits).
    """
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    out: dict[str, Any] = {}
    for op in ("upsert", "mint", "resume", "continue", "rest"):
        if op == "rest":
            op_mint(bench, bench.rest_tokens)()
        elif op == "continue":
            answer_one(bench)
            answer_one(bench)
        call = BUILDERS[op](bench)
        with CaptureQueriesContext(connection) as ctx:
            call()
        logged = [q["sql"] for q in ctx.captured_queries]
        data = [sql for sql in logged if not sql.lstrip().upper().startswith(TRANSACTION_CONTROL)]
        out[op] = {"data_statements": len(data), "logged": len(logged), "sql": logged}
        if op == "rest":
            op_mint(bench, bench.rest_tokens)()
        elif op == "resume":
            op_mint(bench)()
        call = BUILDERS[op](bench)  # unobserved, as timed
        connection.ensure_connection()
        if bench.target.vendor == "postgresql":
            out[op]["protocol"] = pg_protocol_counts(connection.connection.pgconn, call)
        elif bench.target.vendor == "sqlite":
            out[op]["protocol"] = sqlite_statement_counts(connection.connection, call)
        else:
            out[op]["protocol"] = mysql_statement_counts(connection.connection, call)
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
    vendor = counts.get("vendor", "postgresql")
    cols = (
        f"{'operation':<27} {'median':>9} {'p95':>9} {'x upsert':>9} {'rounds x upsert':>16} "
        f"{'data stmts':>10} {'logged':>6} {'db stmts':>8} {'round trips':>11} {'commits':>7}"
    )
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
            p = c["protocol"]
            row["protocol"] = p
            line += (
                f" {c['data_statements']:>10} {c['logged']:>6} {p.get('statements', '-')!s:>8}"
                f" {p.get('round_trips', '-')!s:>11} {p['commits']:>7}"
            )
        rows.append(row)
        out.write(line + "\n")
    resume = next(r for r in rows if r["op"] == "resume")
    rest = next(r for r in rows if r["op"] == "rest")
    rest_rounds = [median(r["rest"]) / median(r["resume"]) for r in rounds]
    noop = next(r for r in rows if r["op"] == "rest_noop")
    floor_mint = next(r for r in rows if r["op"] == "floor_mint")
    mint_row = next(r for r in rows if r["op"] == "mint")
    noop_rounds = [median(r["rest_noop"]) / median(r["resume"]) for r in rounds]
    out.write(
        f"\nREST / resume_pause: {rest['median_us'] / resume['median_us']:.2f}x "
        f"(rounds {min(rest_rounds):.2f}-{max(rest_rounds):.2f})\n"
        f"DRF no-op / resume_pause: {noop['median_us'] / resume['median_us']:.2f}x "
        f"(rounds {min(noop_rounds):.2f}-{max(noop_rounds):.2f}); "
        f"(REST - no-op) / resume_pause: "
        f"{(rest['median_us'] - noop['median_us']) / resume['median_us']:.2f}x\n"
        f"mint_pause / floor mint: {mint_row['median_us'] / floor_mint['median_us']:.2f}x "
        f"(the floor mint: the same statements on the raw driver, one transaction)\n"
    )
    out.write(
        "\nTimes in us per call. 'x upsert' = median / the port upsert's median in the same run;\n"
        "'rounds x upsert' = range of the per-round ratios. data stmts = CaptureQueriesContext without\n"
        "BEGIN/COMMIT/SAVEPOINT/RELEASE; logged = all it captured. " + COUNTS_NOTE[vendor]
    )
    return out.getvalue(), rows


# -- main ---------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument(
        "--database",
        required=True,
        help=f"'sqlite', a postgres:// URL (e.g. {DEFAULT_PG_URL}) or a mysql:// URL",
    )
    parser.add_argument("--n", type=int, default=500, help="calls per operation per round")
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds, after one warm-up round")
    parser.add_argument("--chunk", type=int, default=50, help="calls an operation makes before the next one")
    parser.add_argument(
        "--value-bytes", type=int, default=2048, help="size of the transcript and of the upsert"
    )
    parser.add_argument("--profile", action="store_true", help="afterwards, cProfile mint and resume")
    parser.add_argument(
        "--prepared",
        action="store_true",
        help="PostgreSQL: Django's OPTIONS server_side_binding=True, prepare_threshold=5 (recommended)",
    )
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
            cur.execute(
                f"SELECT count(*) FROM {connection.ops.quote_name(table)} WHERE thread_id NOT LIKE %s",
                ["bench-%"],
            )
            row = cur.fetchone()
            total += int(row[0]) if row else 0
    return total


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    target = make_target(args.database, 5 if args.prepared else None, server_side_binding=args.prepared)
    if target.vendor == "postgresql":
        ensure_postgres_database(target.conninfo)
    elif target.vendor == "mysql":
        ensure_mysql_database(target)
    configure_django(
        target,
        extra_apps=["rest_framework", "rest_framework.authtoken"],
        ROOT_URLCONF=URLCONF,
        REST_FRAMEWORK={
            "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.TokenAuthentication"]
        },
    )
    install_urls()
    check_statements(target.vendor)  # MariaDB: nothing to compare, the floor runs the port's own statement
    if (foreign := foreign_rows()) and not args.force:
        raise SystemExit(
            f"the tables hold {foreign} rows the bench did not write and it empties them: point --database "
            "at a database of its own (e.g. .../turnstate_bench_lc) or pass --force"
        )
    floor_call, floor_close, floor_driver = make_floor(target)
    prompt, messages = make_transcript(args.value_bytes)
    bench = Bench(target, prompt, messages, make_values(args.value_bytes), floor_call, deque(), deque())
    bench.client = rest_client()
    bench.floor_mint = make_floor_mint(bench, floor_driver)
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
        f"{ {'postgresql': 'PostgreSQL', 'sqlite': 'SQLite', 'mysql': 'MariaDB'}[target.vendor] } "
        f"({env['database_server'].split(' on ')[0]}), n={args.n} x {args.repeat} rounds per operation, "
        f"transcript {args.value_bytes} B"
    )
    table, rows = render(title, samples, rounds, {**counts, "vendor": target.vendor})
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
