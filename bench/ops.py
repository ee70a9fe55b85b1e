#!/usr/bin/env python
"""What operators wait for on a big store: the unresumable page, the change lists, and a purge.

A benchmark, not a test: it seeds PostgreSQL with COPY (not timed), prints a table, writes
``bench/results/ops-postgresql.json`` (plus the plans, ``ops-explain.txt``) and exits 0
whether or not the targets are met. Figures and their reading: ``bench/OPS.md``. Run it from
the repository root::

    .venv/bin/python bench/ops.py                       # 10k, 100k and 1M rows, then the purge
    .venv/bin/python bench/ops.py --sizes 10000 --purge-rows 100000

It drops and recreates its own database (``turnstate_bench_ops`` by default), never another.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
# Run as a script, this file's directory heads sys.path, where bench/langgraph.py would shadow
# the langgraph package the LangGraph contrib imports.
sys.path[:] = [p for p in sys.path if Path(p or os.curdir).resolve() != BENCH_DIR]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/turnstate_bench_ops"
PAGE_TARGET_MS = 150.0
PURGE_TARGET_ROWS_PER_S = 50_000.0
RSS_TARGET_MB = 150.0
RUNS = 15
META = "turnstate_app_checkpointmetadata"
PAUSE = "turnstate_app_pause"
META_COLUMNS = ("thread_id", "checkpoint_id", "key", "value", "task_id", "created_at", "updated_at")
PAUSE_COLUMNS = (
    "jti",
    "run_id",
    "session_id",
    "thread_id",
    "checkpoint_id",
    "scope_hash",
    "tool_call_id",
    "name",
    "request_key",
    "resumable",
    "status",
    "created_at",
    "answered_at",
    "expires_at",
)
TURN_STATE = json.dumps(
    {"format": 1, "prompt": "Book the cheapest flight.", "messages": [{"role": "user"}] * 8}
)


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


# --- seeding (not timed) -------------------------------------------------------------------


def copy_rows(table: str, columns: tuple[str, ...], rows: Iterator[tuple[Any, ...]]) -> None:
    from django.db import connection

    with connection.cursor() as cursor, cursor.connection.cursor() as raw:
        names = ", ".join(f'"{c}"' for c in columns)
        with raw.copy(f'COPY "{table}" ({names}) FROM STDIN') as copy:
            for row in rows:
                copy.write_row(row)


def truncate() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f'TRUNCATE "{META}", "{PAUSE}" RESTART IDENTITY')


def analyze() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f'VACUUM ANALYZE "{META}"')
        cursor.execute(f'VACUUM ANALYZE "{PAUSE}"')


def seed_store(n_rows: int, rng: random.Random) -> dict[str, int]:
    """``n_rows`` metadata rows around ``n_rows / 10`` pauses, 1% of them unresumable.

    Pauses: 60% answered (request, turn state, answer), 10% expired, 30% pending. Of the 1%
    unresumable, half are pending pauses whose turn state is gone and half are request rows
    with no ledger row. Creation times are spread evenly over 30 days, in random order. The
    rest of the rows are other keys a checkpointer keeps in the same threads.
    """
    truncate()
    now = datetime.now().astimezone()
    pauses = n_rows // 10
    unresumable = max(2, pauses // 100)
    lost = set(rng.sample(range(pauses), unresumable // 2))
    legacy = unresumable - len(lost)
    plan = []
    for i in range(pauses):
        status = "pending" if i in lost else rng.choices(["answered", "expired", "pending"], [6, 1, 3])[0]
        plan.append((i, status, now - timedelta(seconds=rng.uniform(0, 30 * 86400))))
    meta: list[tuple[Any, ...]] = []

    def store_rows() -> Iterator[tuple[Any, ...]]:
        for i, status, created in plan:
            thread, checkpoint = f"thread-{i}", f"cp-{i % 7}"
            yield (
                thread,
                checkpoint,
                f"ask_user_request:call-{i}",
                '{"question":"Which date?"}',
                f"run-{i}",
                created,
                created,
            )
            if i not in lost:
                yield (
                    thread,
                    checkpoint,
                    f"turn_state:jti-{i:09d}",
                    TURN_STATE,
                    f"run-{i}",
                    created,
                    created,
                )
            if status == "answered":
                yield (thread, checkpoint, f"answer:jti-{i:09d}", '"the 14th"', f"run-{i}", created, created)
        for j in range(legacy):
            created = now - timedelta(seconds=rng.uniform(0, 30 * 86400))
            yield (f"legacy-{j}", "cp-0", f"interrupt_payload:int-{j}", "{}", None, created, created)

    written = 0
    for row in store_rows():
        meta.append(row)
        written += 1
    others = max(0, n_rows - written)
    for k in range(others):
        created = now - timedelta(seconds=rng.uniform(0, 30 * 86400))
        thread = f"thread-{rng.randrange(max(pauses, 1))}"
        meta.append((thread, f"cp-{k % 7}", f"channel_values:{k}", '{"messages":[]}', None, created, created))
    rng.shuffle(meta)  # physical order unrelated to age, as after months of traffic
    copy_rows(META, META_COLUMNS, iter(meta))
    del meta

    def ledger_rows() -> Iterator[tuple[Any, ...]]:
        for i, status, created in plan:
            answered_at = created + timedelta(minutes=5) if status == "answered" else None
            yield (
                f"jti-{i:09d}",
                f"run-{i}",
                "session",
                f"thread-{i}",
                f"cp-{i % 7}",
                "scope",
                f"call-{i}",
                "ask_user",
                f"ask_user_request:call-{i}",
                i not in lost,
                status,
                created,
                answered_at,
                created + timedelta(days=7),
            )

    copy_rows(PAUSE, PAUSE_COLUMNS, ledger_rows())
    analyze()
    return {"metadata_rows": n_rows, "pauses": pauses, "unresumable": unresumable}


def seed_purgeable(n_rows: int, rng: random.Random) -> dict[str, int]:
    """``n_rows`` metadata rows of old answered pauses (request, turn state, answer: three each),
    and 1% more pauses still pending, whose rows the purge must keep."""
    truncate()
    now = datetime.now().astimezone()
    pauses = n_rows // 3
    keep = pauses // 100

    def rows() -> Iterator[tuple[Any, ...]]:
        for i in range(pauses + keep):
            created = now - timedelta(days=60 + rng.uniform(0, 30))
            thread, checkpoint = f"thread-{i}", "cp"
            yield (
                thread,
                checkpoint,
                f"ask_user_request:call-{i}",
                '{"question":"Which date?"}',
                None,
                created,
                created,
            )
            yield (thread, checkpoint, f"turn_state:jti-{i:09d}", TURN_STATE, None, created, created)
            if i < pauses:
                yield (thread, checkpoint, f"answer:jti-{i:09d}", '"the 14th"', None, created, created)

    def ledger() -> Iterator[tuple[Any, ...]]:
        for i in range(pauses + keep):
            created = now - timedelta(days=60 + rng.uniform(0, 30))
            answered = i < pauses
            yield (
                f"jti-{i:09d}",
                f"run-{i}",
                "session",
                f"thread-{i}",
                "cp",
                "scope",
                f"call-{i}",
                "ask_user",
                f"ask_user_request:call-{i}",
                True,
                "answered" if answered else "pending",
                created,
                created + timedelta(minutes=5) if answered else None,
                created + timedelta(days=7),
            )

    copy_rows(META, META_COLUMNS, rows())
    copy_rows(PAUSE, PAUSE_COLUMNS, ledger())
    analyze()
    return {"purgeable_rows": pauses * 3, "purgeable_pauses": pauses, "kept_pauses": keep}


# --- measuring ------------------------------------------------------------------------------


def timed(action: Callable[[], Any], runs: int = RUNS) -> dict[str, float]:
    """Median and worst of ``runs`` timings in ms, after two untimed warm-up runs."""
    for _ in range(2):
        action()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        samples.append((time.perf_counter() - start) * 1000)
    return {"median_ms": round(statistics.median(samples), 1), "max_ms": round(max(samples), 1)}


def measure_pages() -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    from turnstate_app.models import UnresumablePause

    def first_page() -> list[Any]:
        return list(UnresumablePause.objects.order_by("-created_at", "-pk")[:100])

    results: dict[str, Any] = {"query_first_page": timed(first_page)}
    results["query_first_page"]["rows"] = len(first_page())
    from turnstate_app.status import lifecycle_status

    statements_of_status: list[str] = []
    with connection.execute_wrapper(counting(statements_of_status)):
        figures = lifecycle_status().as_dict()
    results["status"] = timed(lifecycle_status) | {
        "queries": len(statements_of_status),
        "figures": {k: v for k, v in figures.items() if k != "at"},
    }
    admin, _ = get_user_model().objects.get_or_create(
        username="bench", defaults={"is_staff": True, "is_superuser": True}
    )
    client = Client()
    client.force_login(admin)
    for name in ("unresumablepause", "pause", "checkpointmetadata"):
        url = f"/admin/turnstate_app/{name}/"
        for depth, page_url in pages_at_depths(client, url, DEPTHS).items():

            def get(url: str = page_url) -> None:
                response = client.get(url)
                assert response.status_code == 200, response.status_code

            statements: list[str] = []
            with connection.execute_wrapper(counting(statements)):
                get()
            key = f"admin_{name}" if depth == 1 else f"admin_{name}_page{depth}"
            results[key] = timed(get) | {"queries": len(statements)}
    from turnstate_app.models import Pause

    thread = Pause.objects.order_by("pk").values_list("thread_id", flat=True).first()
    for name in ("unresumablepause", "pause"):

        def search(url: str = f"/admin/turnstate_app/{name}/?q={thread}") -> None:
            assert client.get(url).status_code == 200

        results[f"admin_{name}_search"] = timed(search)
    return results


DEPTHS = (1, 11, 51, 101)
"""The admin pages measured: the first, and the ones reached by following "Next page"."""


def pages_at_depths(client: Any, url: str, depths: tuple[int, ...]) -> dict[int, str]:
    """The URL of each page in ``depths`` that exists, by following the footer's "Next page" (untimed)."""
    import html
    import re

    found = {1: url}
    page, current = 1, url
    while page < max(depths):
        link = re.search(r'href="(\?[^"]*)" class="turnstate-next"', client.get(current).content.decode())
        if link is None:
            break
        page, current = page + 1, url + html.unescape(link.group(1))
        if page in depths:
            found[page] = current
    return found


def counting(statements: list[str]) -> Callable[..., Any]:
    """An execute wrapper that notes each statement (the test Client resets Django's own log)."""

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        statements.append(sql)
        return execute(sql, params, many, context)

    return wrapper


def explain_first_page() -> str:
    from turnstate_app.models import UnresumablePause

    query = UnresumablePause.objects.order_by("-created_at", "-pk")[:100]
    return str(query.explain(analyze=True, buffers=True))


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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", default=DEFAULT_URL, help=f"PostgreSQL URL (default {DEFAULT_URL})")
    parser.add_argument("--sizes", default="10000,100000,1000000", help="metadata rows per page run")
    parser.add_argument("--purge-rows", type=int, default=1_000_000, help="metadata rows to purge (0: skip)")
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    setup_django(args.database)
    rng = random.Random(args.seed)
    report: dict[str, Any] = {"database": "postgresql", "pages": {}, "purge": None}
    explain = ""
    for size in [int(s) for s in args.sizes.split(",") if s]:
        started = time.perf_counter()
        shape = seed_store(size, rng)
        print(f"seeded {shape} in {time.perf_counter() - started:.0f}s", flush=True)
        report["pages"][str(size)] = shape | measure_pages()
        explain = explain_first_page()
        print(json.dumps(report["pages"][str(size)]), flush=True)
    if args.purge_rows:
        started = time.perf_counter()
        shape = seed_purgeable(args.purge_rows, rng)
        print(f"seeded {shape} in {time.perf_counter() - started:.0f}s", flush=True)
        from django.db import connections

        connections.close_all()
        report["purge"] = shape | measure_purge(args.database, args.batch_size)
        print(json.dumps(report["purge"]), flush=True)
    print_table(report)
    results = BENCH_DIR / "results"
    results.mkdir(exist_ok=True)
    (results / "ops-postgresql.json").write_text(json.dumps(report, indent=2) + "\n")
    if explain:
        (results / "ops-explain.txt").write_text(explain + "\n")


def print_table(report: dict[str, Any]) -> None:
    header = ("rows", "query page", "unresumable page", "pauses page", "store page", "status")
    widths = (9, 10, 16, 11, 10, 10)
    print("\n" + "  ".join(f"{h:>{w}}" for h, w in zip(header, widths, strict=True)))
    for size, r in report["pages"].items():
        cells = [
            f"{r['query_first_page']['median_ms']} ms",
            f"{r['admin_unresumablepause']['median_ms']} ms/{r['admin_unresumablepause']['queries']}q",
            f"{r['admin_pause']['median_ms']} ms/{r['admin_pause']['queries']}q",
            f"{r['admin_checkpointmetadata']['median_ms']} ms/{r['admin_checkpointmetadata']['queries']}q",
            f"{r['status']['median_ms']} ms/{r['status']['queries']}q",
        ]
        print(f"{int(size):>9}  " + "  ".join(f"{c:>{w}}" for c, w in zip(cells, widths[1:], strict=True)))
    for size, r in report["pages"].items():
        deep = {k: v["median_ms"] for k, v in r.items() if "_page" in k or k.endswith("_search")}
        print(f"{int(size):>9}  deeper pages and searches (median ms): {deep}")
    purge = report["purge"]
    if purge:
        print(
            f"\npurge: {purge['rows_deleted']} rows + {purge['pauses_deleted']} pauses "
            f"in {purge['seconds']} s: "
            f"{purge['rows_per_s']} rows/s (target >= {PURGE_TARGET_ROWS_PER_S:.0f}), "
            f"peak RSS {purge['peak_rss_mb']} MB (target < {RSS_TARGET_MB:.0f})"
        )
    print(f"page target: <= {PAGE_TARGET_MS:.0f} ms at 1M rows")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--run-measured"]:
        run_measured(sys.argv[2:])
    else:
        main()
