#!/usr/bin/env python
"""What operators wait for on a big store: ``turnstate_status`` and each of its figures, the
status endpoint, the pause lists, and a purge.

A benchmark, not a test: it seeds PostgreSQL with COPY (not timed) with what 90 days of use
leave (``bench/ops_seed.py``), at each size times every operation and every figure's own query
in interleaved rounds, prints a table, writes ``bench/results/ops-postgresql.json`` (plus the
plan of each figure's query at the biggest size, ``ops-explain.txt``) and exits 0 whether or not
the targets are met. Figures and their reading: ``bench/OPS.md``. Run it from the repository root::

    .venv/bin/python bench/ops.py                        # 10k, 1M and 5M store rows, then the purge
    .venv/bin/python bench/ops.py --sizes 10000 100000 --no-purge
    .venv/bin/python bench/ops.py --purge-only           # the purge of 1M rows alone

It drops and recreates its own database (``turnstate_bench_ops`` by default), never another.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
# Run as a script, this file's directory heads sys.path, where bench/langgraph.py would shadow
# the langgraph package the LangGraph contrib imports.
sys.path[:] = [p for p in sys.path if Path(p or os.curdir).resolve() != BENCH_DIR]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench import ops_seed  # noqa: E402  (after the path is fixed)

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/turnstate_bench_ops"
DEFAULT_SIZES = (10_000, 1_000_000, 5_000_000)
ROUNDS = 15
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


def operations() -> dict[str, Callable[[], Any]]:
    """What an operator (or a probe) waits for, each a callable."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client
    from rest_framework.test import APIClient

    from turnstate_app.status import lifecycle_status

    staff, _ = get_user_model().objects.get_or_create(
        username="bench", defaults={"is_staff": True, "is_superuser": True}
    )
    api = APIClient()
    api.force_authenticate(user=staff)
    admin = Client()
    admin.force_login(staff)

    def get(client: Any, url: str) -> Callable[[], None]:
        def action() -> None:
            response = client.get(url)
            if response.status_code != 200:
                raise RuntimeError(f"GET {url}: {response.status_code}")

        return action

    from turnstate_app.models import Pause
    from turnstate_app.status import DEFAULT_COUNT_LIMIT, bounded_count

    return {
        "turnstate_status": lambda: call_command("turnstate_status", stdout=io.StringIO()),
        "lifecycle_status()": lifecycle_status,
        "GET status/": get(api, API + "status/"),
        "admin pause list": get(admin, "/admin/turnstate_app/pause/"),
        "GET pauses/": get(api, API + "pauses/"),
        "admin unresumable list": get(admin, "/admin/turnstate_app/unresumablepause/"),
        # What one count that reaches the cap costs (settled pauses, through the status index):
        # the yardstick of a figure whose rows counted grow past it.
        "count to the cap": lambda: bounded_count(Pause.objects.settled(), DEFAULT_COUNT_LIMIT),
    }


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


def measure_size(rounds: int, rng: random.Random) -> dict[str, Any]:
    from django.db import connection
    from django.utils import timezone

    from turnstate_app.status import DEFAULT_COUNT_LIMIT

    now, limit = timezone.now(), DEFAULT_COUNT_LIMIT
    queries = figure_queries(now, limit)
    problems = check_figures(now, limit, queries)
    ops = operations()
    result: dict[str, Any] = {"figures": {}, "operations": {}, "figure_problems": problems}
    for name, query in queries.items():
        result["figures"][name] = {"counted": query(), "capped": False}
        if name != "oldest_pending_age_seconds":
            result["figures"][name]["capped"] = result["figures"][name]["counted"] >= limit
    for name, op in ops.items():
        statements: list[tuple[str, str]] = []
        with capturing(statements):
            op()
        result["operations"][name] = {"statements": len(statements)}
    timings = interleaved({**{f"figure:{n}": q for n, q in queries.items()}, **ops}, rounds, rng)
    for key, timing in timings.items():
        kind, _, name = key.partition(":")
        if kind == "figure":
            result["figures"][name] |= timing
        else:
            result["operations"][key] |= timing
    result["count_limit"] = limit
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_size_pretty(pg_total_relation_size(%s)), pg_size_pretty(pg_total_relation_size(%s))",
            [ops_seed.META, ops_seed.PAUSE],
        )
        result["store_size"], result["ledger_size"] = cursor.fetchone()
    return result


def explain_figures(now: datetime, limit: int) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of each figure's statement, exactly as its QuerySet compiles it."""
    from django.db import connection

    parts = []
    for name, query in figure_queries(now, limit).items():
        statements: list[tuple[str, str]] = []
        with capturing(statements, keep_params=True):
            query()
        for sql, params in statements:
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
                plan = "\n".join(row[0] for row in cursor.fetchall())
            parts.append(f"=== {name}\n{sql % tuple(literal(p) for p in params)}\n\n{plan}\n")
    return "\n".join(parts)


def literal(value: Any) -> str:
    """A parameter as it reads in SQL, for the statement printed above its plan."""
    if isinstance(value, datetime):
        return f"'{value.isoformat()}'"
    if isinstance(value, str):
        return "'" + str.__str__(value).replace("'", "''") + "'"
    return repr(value)


class capturing:  # noqa: N801  (used as a context manager, like Django's CaptureQueriesContext)
    """Notes each statement run on the default connection (``(sql, repr(params))``; with
    ``keep_params`` the parameters themselves), through a public ``execute_wrapper``: the test
    Client resets Django's own query log."""

    def __init__(self, into: list[Any], *, keep_params: bool = False) -> None:
        from django.db import connection

        def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            into.append((sql, params if keep_params else repr(params)))
            return execute(sql, params, many, context)

        self._context = connection.execute_wrapper(wrapper)

    def __enter__(self) -> None:
        self._context.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._context.__exit__(*exc)


# --- deeper admin pages (--deep-pages) --------------------------------------------------------

DEPTHS = (11, 51, 101)
"""The admin pages measured with ``--deep-pages``: the ones reached by following "Next page"."""


def measure_deep_pages(rounds: int, rng: random.Random) -> dict[str, Any]:
    """Later pages of the admin's lists and their exact searches (reached untimed, then timed)."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from turnstate_app.models import Pause

    admin = Client()
    admin.force_login(get_user_model().objects.get(username="bench"))
    actions: dict[str, Callable[[], Any]] = {}
    for name in ("unresumablepause", "pause", "checkpointmetadata"):
        url = f"/admin/turnstate_app/{name}/"
        for depth, page_url in pages_at_depths(admin, url, DEPTHS).items():
            actions[f"admin {name} page {depth}"] = partial(admin.get, page_url)
    thread = Pause.objects.order_by("pk").values_list("thread_id", flat=True).first()
    for name in ("unresumablepause", "pause"):
        actions[f"admin {name} search"] = partial(admin.get, f"/admin/turnstate_app/{name}/?q={thread}")
    return interleaved(actions, rounds, rng)


def pages_at_depths(client: Any, url: str, depths: tuple[int, ...]) -> dict[int, str]:
    """The URL of each page in ``depths`` that exists, by following the footer's "Next page" (untimed)."""
    import html
    import re

    found = {}
    page, current = 1, url
    while page < max(depths):
        link = re.search(r'href="(\?[^"]*)" class="turnstate-next"', client.get(current).content.decode())
        if link is None:
            break
        page, current = page + 1, url + html.unescape(link.group(1))
        if page in depths:
            found[page] = current
    return found


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
    parser.add_argument("--deep-pages", action="store_true", help="also time later admin pages and searches")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--output", default=None, help="file name under bench/results/")
    args = parser.parse_args()
    if args.purge_only:
        args.sizes, args.no_purge = [], False
    if args.output is None:
        args.output = "ops-purge-postgresql.json" if args.purge_only else "ops-postgresql.json"
    run_started = time.perf_counter()
    setup_django(args.database)
    from django.db import connection
    from django.utils import timezone

    from turnstate_app.status import DEFAULT_COUNT_LIMIT

    rng = random.Random(args.seed)
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        server = cursor.fetchone()[0]
    report: dict[str, Any] = {
        "database": "postgresql",
        "server_version": server,
        "python": platform.python_version(),
        "date": timezone.now().date().isoformat(),
        "rounds": args.rounds,
        "seed": args.seed,
        "sizes": {},
        "purge": None,
    }
    owners = ops_seed.seed_owners()
    explain = ""
    for index, size in enumerate(args.sizes):
        started = time.perf_counter()
        shape = ops_seed.seed_store(size, args.seed, owners)
        seeded = time.perf_counter() - started
        analyze()
        vacuumed = time.perf_counter() - started - seeded
        print(
            f"seeded {size} rows in {seeded:.0f}s (+{vacuumed:.0f}s VACUUM ANALYZE): {json.dumps(shape)}",
            flush=True,
        )
        load = os.getloadavg()[0]
        started = time.perf_counter()
        measured = measure_size(args.rounds, rng)
        if args.deep_pages:
            measured["deep_pages"] = measure_deep_pages(args.rounds, rng)
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
            **measured,
        }
        print(f"timed {size} rows in {timing:.0f}s", flush=True)
        if index == len(args.sizes) - 1:
            explain = explain_figures(timezone.now(), DEFAULT_COUNT_LIMIT)
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
    results = BENCH_DIR / "results"
    results.mkdir(exist_ok=True)
    (results / args.output).write_text(json.dumps(report, indent=2) + "\n")
    if explain:
        biggest = args.sizes[-1]
        header = (
            f"EXPLAIN (ANALYZE, BUFFERS) of each figure's query at {biggest} store rows, {report['date']}\n\n"
        )
        (results / "ops-explain.txt").write_text(header + explain)


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


def print_sizes(report: dict[str, Any], sizes: list[str]) -> None:
    first, width, base = report["sizes"][sizes[0]], 26, f"x{label(sizes[0])}"
    print(f"\n{'store rows':<24}" + "".join(f"{label(s) + ' rows':>{width}}" for s in sizes))
    print(f"{'pauses':<24}" + "".join(f"{report['sizes'][s]['shape']['pauses']:>{width}}" for s in sizes))
    print(f"\n{'operation (median)':<24}" + f"{'ms  ' + base + '  statements':>{width}}" * len(sizes))
    for name in first["operations"]:
        cells = []
        for s in sizes:
            op = report["sizes"][s]["operations"][name]
            times = ratio(op["median_ms"], first["operations"][name]["median_ms"])
            cells.append(f"{op['median_ms']:>9.1f}  {times:>6}  {op['statements']:>3}q")
        print(f"{name:<24}" + "".join(f"{c:>{width}}" for c in cells))
    print(f"\n{'figure (median)':<24}" + f"{'counted       ms   ' + base:>{width}}" * len(sizes))
    for name in first["figures"]:
        cells = []
        for s in sizes:
            fig = report["sizes"][s]["figures"][name]
            counted = "-" if fig["counted"] is None else f"{fig['counted']}{'+' if fig['capped'] else ''}"
            times = ratio(fig["median_ms"], first["figures"][name]["median_ms"])
            cells.append(f"{counted:>9} {fig['median_ms']:>8.1f} {times:>6}")
        print(f"{name:<24}" + "".join(f"{c:>{width}}" for c in cells))
    print(
        f"\ntarget: turnstate_status and GET status/ within {STATUS_TARGET_RATIO}x of their 10k cost where "
        "the rows counted are the same, within their cap's cost (count to the cap) where they are not"
    )
    for s in sizes:
        deep = report["sizes"][s].get("deep_pages")
        if deep:
            medians = {k: v["median_ms"] for k, v in deep.items()}
            print(f"{label(s)}: deeper pages and searches (median ms): {medians}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--run-measured"]:
        run_measured(sys.argv[2:])
    else:
        main()
