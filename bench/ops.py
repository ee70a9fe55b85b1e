#!/usr/bin/env python
"""What operators wait for on a big store: every operator view of the app (each REST list with
its filters and its first, 100th and last page, each detail, each admin list with every filter
value, its search and its change page, each read-only command), each figure of
``turnstate_status``, and a purge.

A benchmark, not a test: it seeds PostgreSQL with COPY (not timed) with what 90 days of use
leave (``bench/ops_seed.py``), at each size times every view (``bench/ops_views.py``) and every
figure's own query in interleaved rounds, with the rows each returned or counted and the
statements it ran, prints a table, writes ``bench/results/ops-postgresql.json`` (plus, at the
biggest size, the plan of each figure's query and of the slowest statement of each view over
the target, ``ops-explain.txt``) and exits 0 whether or not the targets are met. Figures and
their reading: ``bench/OPS.md``. Run it from the repository root::

    .venv/bin/python bench/ops.py --no-purge             # 10k, 1M and 10M store rows (about an hour)
    .venv/bin/python bench/ops.py --sizes 10000 100000 --no-purge
    .venv/bin/python bench/ops.py --purge-only           # the purge of 1M rows alone
    .venv/bin/python bench/ops.py --steady-traffic --no-purge  # the same recent traffic at every size

It drops and recreates its own database (``turnstate_bench_ops`` by default), never another.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
# Run as a script, this file's directory heads sys.path, where bench/langgraph.py would shadow
# the langgraph package the LangGraph contrib imports.
sys.path[:] = [p for p in sys.path if Path(p or os.curdir).resolve() != BENCH_DIR]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench import ops_seed, ops_views  # noqa: E402  (after the path is fixed)

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/turnstate_bench_ops"
DEFAULT_SIZES = (10_000, 1_000_000, 10_000_000)
ROUNDS = 15
SLOW_MS = 1000.0
SLOW_ROUNDS = 3
"""A view whose untimed run took over SLOW_MS is timed in SLOW_ROUNDS rounds of its own."""
STATUS_TARGET_RATIO = 1.5
PURGE_TARGET_ROWS_PER_S = 50_000.0
RSS_TARGET_MB = 150.0
API = "/api/turnstate/"


def setup_django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    recreate_database(url)
    import django
    from django.test.utils import setup_test_environment

    django.setup()
    setup_test_environment()  # lets the test Client in (ALLOWED_HOSTS)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def recreate_database(url: str) -> None:
    import dj_database_url
    import psycopg

    name = dj_database_url.parse(url)["NAME"]
    if not name.startswith("turnstate_bench"):
        raise SystemExit(
            f"refusing to drop {name!r}: the bench only recreates databases named turnstate_bench*"
        )
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def analyze() -> None:
    """VACUUM ANALYZE both tables: statistics and the visibility map, as autovacuum keeps them."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f'VACUUM ANALYZE "{ops_seed.META}"')
        cursor.execute(f'VACUUM ANALYZE "{ops_seed.PAUSE}"')


# --- what is measured ------------------------------------------------------------------------


def figure_queries(now: datetime, limit: int) -> dict[str, Callable[[], Any]]:
    """Each figure of ``lifecycle_status(now=now, limit=limit)`` as the one query
    ``turnstate_app/status.py`` runs for it, through the same QuerySet methods (checked against
    the statements ``lifecycle_status`` itself runs: :func:`check_figures`)."""
    from turnstate_app.choices import PauseStatus
    from turnstate_app.models import Pause
    from turnstate_app.status import bounded_count

    ledger = Pause.objects.all()
    pending = ledger.in_effective_status(PauseStatus.PENDING, now)

    def oldest() -> int | None:
        first = pending.order_by("created_at").values_list("created_at", flat=True).first()
        return None if first is None else max(0, int((now - first).total_seconds()))

    return {
        "pending": lambda: bounded_count(pending, limit),
        "oldest_pending_age_seconds": oldest,
        "awaiting_handoff": lambda: bounded_count(ledger.awaiting_handoff(), limit),
        "queued": lambda: bounded_count(ledger.queued(), limit),
        "running": lambda: bounded_count(ledger.running(now), limit),
        "stalled": lambda: bounded_count(ledger.stalled(now), limit),
        "unresumable": lambda: bounded_count(ledger.stranded(now), limit),
        "failed_groups": lambda: bounded_count(ledger.failed_groups(now), limit),
        "failed_continuations": lambda: bounded_count(ledger.continuation_failed(), limit),
    }


def check_figures(now: datetime, limit: int, queries: dict[str, Callable[[], Any]]) -> list[str]:
    """What differs between the bench's figure queries and ``lifecycle_status``'s: a figure whose
    statement ``lifecycle_status`` does not run, or whose value differs (empty: none)."""
    from turnstate_app.status import lifecycle_status

    statements: list[tuple[str, str]] = []
    with capturing(statements):
        figures = lifecycle_status(now=now, limit=limit).as_dict()
    problems = []
    if len(statements) != len(queries):
        problems.append(
            f"lifecycle_status ran {len(statements)} statements, the bench has {len(queries)} figures"
        )
    for name, query in queries.items():
        own: list[tuple[str, str]] = []
        with capturing(own):
            value = query()
        if len(own) != 1 or own[0] not in statements:
            problems.append(f"{name}: not the statement lifecycle_status runs")
        if value != figures[name]:
            problems.append(f"{name}: {value} here, {figures[name]} in lifecycle_status")
    return problems


def views(wanted: Callable[[str], bool]) -> dict[str, ops_views.View]:
    """Every operator view (``bench/ops_views.py``) ``wanted`` names, plus ``lifecycle_status()``
    on its own and the yardstick of a count that reaches its cap."""
    from django.contrib.auth import get_user_model

    from turnstate_app.models import Pause
    from turnstate_app.status import DEFAULT_COUNT_LIMIT, bounded_count, lifecycle_status

    staff, _ = get_user_model().objects.get_or_create(
        username="bench", defaults={"is_staff": True, "is_superuser": True}
    )
    found = {
        **ops_views.build(staff, wanted),
        "lifecycle_status()": ops_views.View(lambda: (lifecycle_status(), None)[1], "figure"),
        # What one count that reaches the cap costs (settled pauses, through the status index):
        # the yardstick of a figure whose rows counted grow past it.
        "count to the cap": ops_views.View(
            lambda: bounded_count(Pause.objects.settled(), DEFAULT_COUNT_LIMIT), "figure"
        ),
    }
    return {name: view for name, view in found.items() if wanted(name)}


def interleaved(actions: dict[str, Callable[[], Any]], rounds: int, rng: random.Random) -> dict[str, Any]:
    """Median and worst ms of each action over ``rounds`` rounds, after one untimed round. Each
    round runs every action once, in a new random order, so a slower minute of a shared machine
    falls on all of them alike."""
    names = list(actions)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(rounds + 1):
        rng.shuffle(names)
        for name in names:
            start = time.perf_counter()
            actions[name]()
            if round_:
                samples[name].append((time.perf_counter() - start) * 1000)
    return {
        name: {"median_ms": round(statistics.median(ms), 1), "max_ms": round(max(ms), 1)}
        for name, ms in samples.items()
    }


def measure_size(
    rounds: int, rng: random.Random, wanted: Callable[[str], bool]
) -> tuple[dict[str, Any], dict[str, ops_views.View]]:
    """Each figure and each view ``wanted`` names: rows counted or returned and statements (one
    untimed run), then median and worst ms over ``rounds`` interleaved rounds; a whole-store view
    once."""
    from django.db import connection
    from django.utils import timezone

    from turnstate_app.status import DEFAULT_COUNT_LIMIT

    now, limit = timezone.now(), DEFAULT_COUNT_LIMIT
    queries = figure_queries(now, limit)
    problems = check_figures(now, limit, queries)
    queries = {name: query for name, query in queries.items() if wanted(name)}
    started = time.perf_counter()
    found = views(wanted)
    result: dict[str, Any] = {
        "figures": {},
        "views": {},
        "figure_problems": problems,
        "views_setup_seconds": round(time.perf_counter() - started, 1),
    }
    for name, query in queries.items():
        result["figures"][name] = {"counted": query(), "capped": False}
        if name != "oldest_pending_age_seconds":
            result["figures"][name]["capped"] = result["figures"][name]["counted"] >= limit
    timed: dict[str, Callable[[], Any]] = {}
    slow: dict[str, Callable[[], Any]] = {}
    for name, view in found.items():
        if view.whole_store:
            continue  # after the rest: measure_whole_store
        statements: list[tuple[str, str]] = []
        start = time.perf_counter()
        with capturing(statements, count_only=True):
            rows = view.run()
        ms = (time.perf_counter() - start) * 1000
        entry: dict[str, Any] = {"kind": view.kind, "rows": rows, "statements": len(statements)}
        if view.depth is not None:
            entry["depth"] = view.depth
        (slow if ms > SLOW_MS else timed)[name] = view.run
        result["views"][name] = entry
    timings = interleaved({**{f"figure:{n}": q for n, q in queries.items()}, **timed}, rounds, rng)
    for key, timing in timings.items():
        kind, _, name = key.partition(":")
        if kind == "figure" and name in result["figures"]:
            result["figures"][name] |= timing
        else:
            result["views"][key] |= timing | {"samples": rounds}
    for key, timing in interleaved(slow, min(rounds, SLOW_ROUNDS), rng).items():
        result["views"][key] |= timing | {"samples": min(rounds, SLOW_ROUNDS)}
    result["count_limit"] = limit
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_size_pretty(pg_total_relation_size(%s)), pg_size_pretty(pg_total_relation_size(%s))",
            [ops_seed.META, ops_seed.PAUSE],
        )
        result["store_size"], result["ledger_size"] = cursor.fetchone()
    return result, found


def measure_whole_store(found: dict[str, ops_views.View]) -> dict[str, Any]:
    """The views that read the whole store by design, each run once (timed, statements counted)."""
    measured: dict[str, dict[str, Any]] = {}
    for name, view in found.items():
        if not view.whole_store:
            continue
        statements: list[tuple[str, str]] = []
        start = time.perf_counter()
        with capturing(statements, count_only=True):
            rows = view.run()
        ms = round((time.perf_counter() - start) * 1000, 1)
        measured[name] = {"kind": view.kind, "rows": rows, "statements": len(statements), "whole_store": True}
        measured[name] |= {"median_ms": ms, "max_ms": ms, "samples": 1}
        print(f"  {name}: {ms} ms, {rows} rows", flush=True)
    return measured


def explain_figures(now: datetime, limit: int, wanted: Callable[[str], bool]) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of each figure's statement ``wanted`` names, exactly as its
    QuerySet compiles it."""
    from django.db import connection

    parts = []
    for name, query in figure_queries(now, limit).items():
        if not wanted(name):
            continue
        statements: list[tuple[str, str]] = []
        with capturing(statements, keep_params=True):
            query()
        for sql, params in statements:
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
                plan = "\n".join(row[0] for row in cursor.fetchall())
            parts.append(f"=== {name}\n{sql % tuple(literal(p) for p in params)}\n\n{plan}\n")
    return "\n".join(parts)


def explain_views(report: dict[str, Any], found: dict[str, ops_views.View]) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of the slowest statement of each view over the target ratio
    (its median at the last size against the first), as the view sent it."""
    sizes = list(report["sizes"])
    first, last = report["sizes"][sizes[0]]["views"], report["sizes"][sizes[-1]]["views"]
    parts = []
    for name, view in found.items():
        base, now = first.get(name, {}).get("median_ms"), last[name]["median_ms"]
        if view.whole_store or not base or now / base <= STATUS_TARGET_RATIO:
            continue
        statements: list[tuple[str, Any, float]] = []
        with timing_statements(statements):
            view.run()
        if not statements:
            continue
        sql, params, ms = max(statements, key=lambda s: s[2])
        from django.db import connection

        try:
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
                plan = "\n".join(row[0] for row in cursor.fetchall())
        except Exception as error:  # noqa: BLE001  (a plan that cannot be had is noted, the run goes on)
            plan = f"(no plan: {error})"
        shown = sql % tuple(literal(p) for p in params) if params else sql
        parts.append(
            f"=== view: {name} ({now / base:.1f}x; slowest of {len(statements)} statements, {ms:.1f} ms)\n"
            f"{shown}\n\n{plan}\n"
        )
    return "\n".join(parts)


class timing_statements:  # noqa: N801  (a context manager, like capturing)
    """Notes each statement on the default connection with its parameters and its ms."""

    def __init__(self, into: list[tuple[str, Any, float]]) -> None:
        from django.db import connection

        def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            start = time.perf_counter()
            try:
                return execute(sql, params, many, context)
            finally:
                into.append((sql, params, (time.perf_counter() - start) * 1000))

        self._context = connection.execute_wrapper(wrapper)

    def __enter__(self) -> None:
        self._context.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._context.__exit__(*exc)


def literal(value: Any) -> str:
    """A parameter as it reads in SQL, for the statement printed above its plan."""
    if isinstance(value, datetime):
        return f"'{value.isoformat()}'"
    if isinstance(value, str):
        return "'" + str.__str__(value).replace("'", "''") + "'"
    return repr(value)


class capturing:  # noqa: N801  (used as a context manager, like Django's CaptureQueriesContext)
    """Notes each statement run on the default connection (``(sql, repr(params))``; with
    ``keep_params`` the parameters themselves; with ``count_only`` nothing but that it ran),
    through a public ``execute_wrapper``: the test Client resets Django's own query log."""

    def __init__(self, into: list[Any], *, keep_params: bool = False, count_only: bool = False) -> None:
        from django.db import connection

        def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            # count_only: the statements of a whole-store command (22k at 10M rows, some with a
            # thousand ids each) would otherwise weigh on the bench's own peak RSS.
            into.append(("", "") if count_only else (sql, params if keep_params else repr(params)))
            return execute(sql, params, many, context)

        self._context = connection.execute_wrapper(wrapper)

    def __enter__(self) -> None:
        self._context.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._context.__exit__(*exc)


# --- the purge --------------------------------------------------------------------------------


def run_measured(command: list[str]) -> None:
    """``--run-measured``: run ``command``, print its wall time, peak RSS and last output line.

    A process of its own, started before this one imports Django: Linux hands a child the
    peak RSS of the address space it was spawned from, so a purge spawned straight from the
    seeding process would report the seeder's memory as its own.
    """
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=REPO_ROOT)
    seconds = time.perf_counter() - start
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
    last = done.stdout.strip().splitlines()[-1]
    print(json.dumps({"seconds": seconds, "peak_kb": peak_kb, "last_line": last}))


def measure_purge(url: str, batch_size: int) -> dict[str, Any]:
    """The command in a child process, as cron runs it: wall time, and the child's peak RSS."""
    env = os.environ | {"DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    command = [sys.executable, "-m", "django", "turnstate_purge", "--older-than", "30"]
    command += ["--batch-size", str(batch_size), "--pythonpath", str(REPO_ROOT)]
    helper = [sys.executable, __file__, "--run-measured", *command]
    measured = json.loads(subprocess.run(helper, env=env, capture_output=True, text=True, check=True).stdout)
    seconds, peak_kb = measured["seconds"], measured["peak_kb"]
    summary = measured["last_line"]  # "deleted P pause(s) and R row(s) in B batch(es)"
    words = summary.split()
    pauses, rows, batches = int(words[1]), int(words[4]), int(words[7])
    return {
        "summary": summary,
        "seconds": round(seconds, 2),
        "rows_deleted": rows,
        "pauses_deleted": pauses,
        "batches": batches,
        "rows_per_s": round(rows / seconds),
        "rows_and_pauses_per_s": round((rows + pauses) / seconds),
        "peak_rss_mb": round(peak_kb / 1024, 1),
    }


# --- the run ----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", default=DEFAULT_URL, help=f"PostgreSQL URL (default {DEFAULT_URL})")
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=list(DEFAULT_SIZES),
        help="store rows of each run (default: %(default)s)",
    )
    parser.add_argument(
        "--rounds", type=int, default=ROUNDS, help="timed rounds per size (default: %(default)s)"
    )
    parser.add_argument("--no-purge", action="store_true", help="skip the purge")
    parser.add_argument(
        "--purge-only",
        action="store_true",
        help="only the purge (no sizes); writes ops-purge-postgresql.json unless --output is given",
    )
    parser.add_argument(
        "--purge-rows", type=int, default=1_000_000, help="store rows to purge (default: %(default)s)"
    )
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--steady-traffic",
        action="store_true",
        help=(
            f"the last {ops_seed.STEADY_DAYS} days hold the same slots at every size (those of "
            f"{ops_seed.STEADY_REFERENCE_ROWS} store rows), only settled history grows; "
            "writes ops-postgresql-steady.json unless --output is given"
        ),
    )
    parser.add_argument("--output", default=None, help="file name under bench/results/")
    parser.add_argument(
        "--only",
        type=re.compile,
        default=None,
        metavar="REGEX",
        help="measure only the views and figures whose name this matches (re.search), e.g. unresumable",
    )
    args = parser.parse_args()
    only = args.only

    def wanted(name: str) -> bool:
        return only is None or only.search(name) is not None

    if args.purge_only:
        args.sizes, args.no_purge = [], False
    if args.steady_traffic and any(size < ops_seed.STEADY_REFERENCE_ROWS for size in args.sizes):
        reference = ops_seed.STEADY_REFERENCE_ROWS
        parser.error(f"--steady-traffic: no size below {reference} store rows (the recent traffic's)")
    if args.output is None:
        args.output = "ops-purge-postgresql.json" if args.purge_only else "ops-postgresql.json"
        args.output = "ops-postgresql-steady.json" if args.steady_traffic and args.sizes else args.output
    run_started = time.perf_counter()
    setup_django(args.database)
    from django.db import connection
    from django.utils import timezone

    from turnstate_app.status import DEFAULT_COUNT_LIMIT

    rng = random.Random(args.seed)
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        server = cursor.fetchone()[0]
        cursor.execute("SHOW jit")
        jit = cursor.fetchone()[0]
    report: dict[str, Any] = {
        "database": "postgresql",
        "server_version": server,
        # JIT compiles a plan whose estimated cost is high (a whole-store read): part of its time.
        "jit": jit,
        "only": None if only is None else only.pattern,
        "python": platform.python_version(),
        "date": timezone.now().date().isoformat(),
        "rounds": args.rounds,
        "seed": args.seed,
        "steady_traffic": args.steady_traffic,
        "sizes": {},
        "purge": None,
    }
    owners = ops_seed.seed_owners()
    explain = ""
    for index, size in enumerate(args.sizes):
        started = time.perf_counter()
        shape = ops_seed.seed_store(size, args.seed, owners, steady_traffic=args.steady_traffic)
        seeded = time.perf_counter() - started
        analyze()
        vacuumed = time.perf_counter() - started - seeded
        print(
            f"seeded {size} rows in {seeded:.0f}s (+{vacuumed:.0f}s VACUUM ANALYZE): {json.dumps(shape)}",
            flush=True,
        )
        load = os.getloadavg()[0]
        started = time.perf_counter()
        measured, found = measure_size(args.rounds, rng, wanted)
        timing = time.perf_counter() - started
        for problem in measured["figure_problems"]:
            print(f"WARNING: {problem}", flush=True)
        report["sizes"][str(size)] = {
            "shape": shape,
            "seed_seconds": round(seeded, 1),
            "vacuum_analyze_seconds": round(vacuumed, 1),
            "timing_seconds": round(timing, 1),
            "load_before": round(load, 2),
            "load_after": round(os.getloadavg()[0], 2),
            # Seeding streams its rows: this stays flat from size to size, or something holds them.
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            **measured,
        }
        print(f"timed {size} rows in {timing:.0f}s", flush=True)
        write_report(report, args.output)  # a run cut short keeps the sizes it finished
        report["sizes"][str(size)]["views"] |= measure_whole_store(found)
        report["sizes"][str(size)]["peak_rss_mb"] = round(
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1
        )
        write_report(report, args.output)
        if index == len(args.sizes) - 1:
            explain = explain_figures(timezone.now(), DEFAULT_COUNT_LIMIT, wanted)
            if index:
                explain += explain_views(report, found)
    if not args.no_purge and args.purge_rows:
        started = time.perf_counter()
        shape = ops_seed.seed_purgeable(args.purge_rows, args.seed)
        analyze()
        print(f"seeded {shape} in {time.perf_counter() - started:.0f}s", flush=True)
        from django.db import connections

        connections.close_all()
        load = round(os.getloadavg()[0], 2)
        report["purge"] = shape | measure_purge(args.database, args.batch_size)
        report["purge"] |= {"load_before": load, "load_after": round(os.getloadavg()[0], 2)}
        print(json.dumps(report["purge"]), flush=True)
    report["run_seconds"] = round(time.perf_counter() - run_started)
    print_table(report)
    write_report(report, args.output)
    if explain:
        biggest = args.sizes[-1]
        header = (
            f"EXPLAIN (ANALYZE, BUFFERS) of each figure's query, then of the slowest statement of each "
            f"view over {STATUS_TARGET_RATIO}x its cost at the first size, at {biggest} store rows, "
            f"{report['date']}\n\n"
        )
        # Beside its report: a quick run under another --output leaves the full run's plans alone.
        default = args.output == "ops-postgresql.json"
        plans = "ops-explain.txt" if default else args.output.removesuffix(".json") + "-explain.txt"
        (BENCH_DIR / "results" / plans).write_text(header + explain)


def write_report(report: dict[str, Any], output: str) -> None:
    results = BENCH_DIR / "results"
    results.mkdir(exist_ok=True)
    (results / output).write_text(json.dumps(report, indent=2) + "\n")


def label(size: str) -> str:
    n = int(size)
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def ratio(ms: float, base: float) -> str:
    return f"{ms / base:.1f}x" if base else "-"


def print_table(report: dict[str, Any]) -> None:
    """Per operation: median ms, ratio to the first size, statements; per figure: what it counted
    (``+``: stopped at the cap), median ms and ratio."""
    sizes = list(report["sizes"])
    if sizes:
        print_sizes(report, sizes)
    purge = report["purge"]
    if purge:
        print(
            f"\npurge: {purge['rows_deleted']} rows + {purge['pauses_deleted']} pauses "
            f"in {purge['seconds']} s: "
            f"{purge['rows_per_s']} rows/s (target >= {PURGE_TARGET_ROWS_PER_S:.0f}), "
            f"peak RSS {purge['peak_rss_mb']} MB (target < {RSS_TARGET_MB:.0f}), "
            f"load {purge['load_before']} -> {purge['load_after']}"
        )


def loads(size: dict[str, Any]) -> str:
    return f"{size['load_before']}, {size['load_after']}"


def print_sizes(report: dict[str, Any], sizes: list[str]) -> None:
    """Per view: median ms, ratio to the first size, rows returned or counted, statements."""
    first, width, base = report["sizes"][sizes[0]], 30, f"x{label(sizes[0])}"
    name_width = 58
    print(f"\n{'store rows':<{name_width}}" + "".join(f"{label(s) + ' rows':>{width}}" for s in sizes))
    print(
        f"{'pauses':<{name_width}}"
        + "".join(f"{report['sizes'][s]['shape']['pauses']:>{width}}" for s in sizes)
    )
    print(
        f"{'peak RSS MB':<{name_width}}"
        + "".join(f"{report['sizes'][s]['peak_rss_mb']:>{width}}" for s in sizes)
    )
    print(
        f"{'load before, after':<{name_width}}"
        + "".join(f"{loads(report['sizes'][s]):>{width}}" for s in sizes)
    )
    print(f"\n{'view (median)':<{name_width}}" + f"{'ms  ' + base + '  rows  stmts':>{width}}" * len(sizes))
    for name in first["views"]:
        cells = []
        for s in sizes:
            view = report["sizes"][s]["views"].get(name)
            if view is None:
                cells.append("-")
                continue
            times = ratio(view["median_ms"], first["views"][name]["median_ms"])
            rows = "-" if view["rows"] is None else str(view["rows"])
            depth = f"@{view['depth']}" if "depth" in view else ""
            cells.append(f"{view['median_ms']:>8.1f} {times:>6} {rows + depth:>7} {view['statements']:>3}q")
        print(f"{name[: name_width - 1]:<{name_width}}" + "".join(f"{c:>{width}}" for c in cells))
    print(f"\n{'figure (median)':<{name_width}}" + f"{'counted       ms   ' + base:>{width}}" * len(sizes))
    for name in first["figures"]:
        cells = []
        for s in sizes:
            fig = report["sizes"][s]["figures"][name]
            counted = "-" if fig["counted"] is None else f"{fig['counted']}{'+' if fig['capped'] else ''}"
            times = ratio(fig["median_ms"], first["figures"][name]["median_ms"])
            cells.append(f"{counted:>9} {fig['median_ms']:>8.1f} {times:>6}")
        print(f"{name:<{name_width}}" + "".join(f"{c:>{width}}" for c in cells))
    print(
        f"\ntarget: each view within {STATUS_TARGET_RATIO}x of its {label(sizes[0])} cost at "
        f"{label(sizes[-1])} (rows: returned or counted; @N: the page reached when a list has fewer than 100)"
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--run-measured"]:
        run_measured(sys.argv[2:])
    else:
        main()
