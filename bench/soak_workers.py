"""Soak of the continuation queue: 1, 2, 4 workers on RQ and on the database worker, one killed.

For each backend (RQ over Redis through django-tasks-rq, with RQ's default worker, which forks
a work horse for each job, and with its ``SimpleWorker``, which runs jobs itself; and
django-tasks-db's ``db_worker``) and each worker count: ``--pauses`` pauses of the ``pay``
graph (``tests/after_answer_support.py``, whose node pays: one row per payment) are minted,
answered over REST by ``--clients`` concurrent HTTP clients against a live server
(``runserver``, threaded, DEBUG off), handed to the queue by ``enqueue_continuation`` and
continued by ``continue_pause`` in the worker processes. One pause's node waits at a gate: the
process running it is killed with ``kill -9`` after its claim and before it pays; a new worker
takes the dead one's place (as a supervisor restarts it); once the pause shows as ``stalled``
the operator's ``turnstate_redeliver --stalled --release`` and ``turnstate_redeliver
--older-than 0`` hand it again, and another worker continues it.

Exits non-zero unless every run had: every answer 200, every node paid exactly once, every pause
``continued`` (no answer stranded; any other is reported with its state), all the
``turnstate_status`` figures at 0, and the killed worker's pause paid once by another process.
Prints throughput (continuations per second, first answer to last continuation) and answer ->
continuation latency (p50, p99; the killed worker's pause aside) per backend and worker count,
as JSON (also written to ``--output``, ``bench/results/soak-workers-postgresql.json``), and with
``--markdown`` the table bench/README.md shows.

All processes use ``tests/settings_rq_worker.py`` on the database ``--database`` names (dropped
and created anew); the queue is picked by ``TURNSTATE_QUEUE``. Not part of the suite:
``make soak-workers`` (``SOAK_PAUSES=2000``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
# bench/langgraph.py would shadow LangGraph itself; the app and tests/ come from the repository root.
sys.path[:] = [p for p in sys.path if Path(p or os.curdir).resolve() != BENCH_DIR]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))
SETTINGS = "tests.settings_rq_worker"
STALLED_AFTER = 5  # seconds: far above a normal run here, so only the killed one stalls
CSRF = "soakworkerssoakworkerssoakworker"  # 32 characters: the cookie and the header agree
RQ_WORKER = ["rqworker", "--job-class", "django_tasks_rq.Job", "--with-scheduler"]
PRELOADED = (  # the AGENTS objects imported before the worker forks: each work horse inherits them
    "import sys, django; django.setup(); "
    "from django.conf import settings; from django.utils.module_loading import import_string; "
    "[import_string(path) for path in settings.TURNSTATE['AGENTS'].values()]; "
    "from django.core.management import execute_from_command_line; "
    "execute_from_command_line(['manage.py', *sys.argv[1:]])"
)
WORKER_COMMANDS = {
    "rq": ["-m", "django", *RQ_WORKER, "default"],  # forks a work horse for each job
    "rq-preloaded": ["-c", PRELOADED, *RQ_WORKER, "default"],
    "rq-simple": ["-m", "django", *RQ_WORKER, "--worker-class", "rq.worker.SimpleWorker", "default"],
    "db": ["-m", "django", "db_worker", "--no-startup-delay", "--no-reload"],
}
BACKEND_NAMES = {
    "rq": "RQ",
    "rq-preloaded": "RQ, AGENTS imported first",
    "rq-simple": "RQ, SimpleWorker",
    "db": "db_worker",
}


def environment(database: str, redis: str, queue: str) -> dict[str, str]:
    """What every process of a run shares: settings, database, queue, ``STALLED_AFTER``."""
    return {
        **{key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"},
        "DJANGO_SETTINGS_MODULE": SETTINGS,
        "DATABASE_URL": database,
        "TURNSTATE_WORKER_DB": database.rsplit("/", 1)[1],
        "TURNSTATE_REDIS_URL": redis,
        "TURNSTATE_QUEUE": queue,
        "TURNSTATE_STALLED_AFTER": str(STALLED_AFTER),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
        "PYTHONUNBUFFERED": "1",
    }


def fresh_database(url: str) -> None:
    """The soak's own database, empty: the ``turnstate_status`` figures count this soak's pauses only."""
    import psycopg
    from psycopg import sql

    server, name = url.rsplit("/", 1)
    with psycopg.connect(f"{server}/postgres", autocommit=True, connect_timeout=5) as connection:
        connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def django_command(env: dict[str, str], *args: str) -> str:
    """``python -m django ARGS`` as an operator runs it, in a process of its own; its output."""
    done = subprocess.run(
        [sys.executable, "-m", "django", *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True
    )
    if done.returncode:
        raise RuntimeError(f"{' '.join(args)} exited {done.returncode}: {done.stdout}{done.stderr}")
    return done.stdout.strip()


def start(env: dict[str, str], args: list[str], log: Path) -> subprocess.Popen[bytes]:
    """``python ARGS`` (``-m django ...``, or ``-c CODE ...``), its output in ``log``."""
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, *args], cwd=REPO_ROOT, env=env, stdout=out, stderr=out)


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM (a warm shutdown: the job a worker runs finishes), then SIGKILL after 60 s."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def until(done: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def parent_of(pid: int) -> int:
    """The process that forked ``pid`` (RQ runs each job in a work horse its worker forks)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


class Answering:
    """Concurrent HTTP clients posting answers to ``pauses/resume/`` as one signed-in user."""

    def __init__(self, base_url: str, session: str) -> None:
        self.base_url = base_url
        self.headers = {
            "Content-Type": "application/json",
            "Cookie": f"sessionid={session}; csrftoken={CSRF}",
            "X-CSRFToken": CSRF,
        }

    def answer(self, token: str) -> int:
        request = urllib.request.Request(
            f"{self.base_url}/api/turnstate/pauses/resume/",
            data=json.dumps({"token": token, "answer": "yes"}).encode(),
            method="POST",
            headers=self.headers,
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return int(response.status)
        except urllib.error.HTTPError as error:
            return int(error.code)
        except OSError:
            return 599  # no response at all

    def all(self, tokens: list[str], clients: int) -> Counter[int]:
        with ThreadPoolExecutor(clients) as pool:
            return Counter(pool.map(self.answer, tokens))


def session_for(username: str) -> str:
    """A session of ``username`` in the database (Django's test client signs in without a password)."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    user, _ = get_user_model().objects.get_or_create(username=username)
    client = Client()
    client.force_login(user)
    return str(client.cookies["sessionid"].value)


def run(
    args: argparse.Namespace, queue: str, workers: int, env: dict[str, str], logs: Path
) -> dict[str, Any]:
    """One backend, one worker count: mint, answer, kill one worker, redeliver; the figures."""
    from tests import after_answer_support as support
    from tests.contrib.langgraph.approvals import RUNS
    from turnstate_app.models import CheckpointMetadata, Pause

    gate = logs / f"gate-{queue}-{workers}"
    entered = Path(f"{gate}.entered")
    started = time.monotonic()
    minted = [support.paused(gate=gate if n == args.pauses // 2 else None) for n in range(args.pauses)]
    threads = [thread for thread, _ in minted]
    jtis = [pause.claims.jti for _, pause in minted]
    gated = jtis[args.pauses // 2]
    others = [jti for jti in jtis if jti != gated]
    minting = time.monotonic() - started

    def log(name: str) -> Path:
        return logs / f"{queue}-{workers}-{name}.log"

    port = free_port()
    serve = ["-m", "django", "runserver", f"127.0.0.1:{port}", "--noreload", "--skip-checks"]
    server = start(env, serve, log("server"))
    processes = [start(env, WORKER_COMMANDS[queue], log(f"worker-{n}")) for n in range(workers)]
    failures: list[str] = []
    killed: dict[str, Any] = {}
    try:
        base_url = f"http://127.0.0.1:{port}"
        until(lambda: Answering(base_url, "").answer("x") != 599, 60)
        answering = Answering(base_url, session_for("soak-workers"))
        begun = time.monotonic()
        statuses = answering.all([pause.token for _, pause in minted], args.clients)
        answer_seconds = time.monotonic() - begun
        if statuses != {200: args.pauses}:
            failures.append(f"answers: {dict(statuses)}")

        if not until(entered.exists, 300):
            failures.append("no worker reached the gated node")
        else:
            killed = kill_claimant(entered, processes)
            processes.append(start(env, WORKER_COMMANDS[queue], log("replacement")))
            killed["state_after_kill"] = Pause.objects.get(jti=gated).continuation

        def settled(which: list[str]) -> bool:
            return not Pause.objects.filter(jti__in=which, continuation__in=("queued", "running")).exists()

        if not until(lambda: settled(others), args.timeout):
            failures.append("the other pauses were not all continued in time")
        since = Pause.objects.filter(jti=gated).values_list("continuation_since", flat=True).first()
        if since is not None:  # stalled once STALLED_AFTER has passed since its claim
            time.sleep(max(0.0, STALLED_AFTER + 0.5 - (time_now() - since).total_seconds()))
        killed["status_before_release"] = status(env)
        killed["release"] = django_command(env, "turnstate_redeliver", "--stalled", "--release")
        gate.touch()
        killed["redeliver"] = django_command(env, "turnstate_redeliver", "--older-than", "0")
        if not until(lambda: settled(jtis), args.timeout):
            failures.append("the released pause was not continued in time")
        until(lambda: drained(queue), 60)
    finally:
        stop([*processes, server])

    paid = Counter(
        CheckpointMetadata.objects.filter(
            thread_id__in=threads, checkpoint_id=RUNS, key__startswith="pay:"
        ).values_list("thread_id", flat=True)
    )
    states = Counter(Pause.objects.filter(jti__in=jtis).values_list("continuation", flat=True))
    rows = [
        (answered, done)
        for answered, done in Pause.objects.filter(jti__in=others, continuation="continued").values_list(
            "answered_at", "continuation_since"
        )
        if answered is not None and done is not None
    ]
    latencies = [(done - answered).total_seconds() for answered, done in rows]
    span = (
        (max(done for _, done in rows) - min(answered for answered, _ in rows)).total_seconds()
        if rows
        else float("nan")
    )
    entries = entered.read_text().split() if entered.exists() else []
    figures = status(env)
    report = {
        "backend": queue,
        "workers": workers,
        "pauses": args.pauses,
        "clients": args.clients,
        "mint_seconds": round(minting, 1),
        "answers_per_second": round(args.pauses / answer_seconds, 1),
        "continuations_per_second": round(len(latencies) / span, 1),
        "latency_p50_ms": round(1000 * quantile(latencies, 0.50)),
        "latency_p99_ms": round(1000 * quantile(latencies, 0.99)),
        "paid_twice": sum(1 for thread in threads if paid[thread] > 1),
        "never_paid": sum(1 for thread in threads if paid[thread] == 0),
        "states": dict(states),
        "stranded": args.pauses - states.get("continued", 0),
        "figures": {name: figures[name] for name in FIGURES},
        "killed": {**killed, "entered_by": entries, "paid": paid[threads[args.pauses // 2]]},
    }
    failures += check(report, entries)
    report["failures"] = failures
    return report


FIGURES = ("awaiting_handoff", "queued", "running", "stalled", "failed_continuations")


def time_now() -> Any:
    from django.utils import timezone

    return timezone.now()


def status(env: dict[str, str]) -> dict[str, Any]:
    return dict(json.loads(django_command(env, "turnstate_status", "--json")))


def drained(queue: str) -> bool:
    """Nothing left on the queue for a worker."""
    if queue != "db":
        from django_rq import get_queue

        return int(get_queue("default").count) == 0
    from django_tasks_db.models import DBTaskResult

    return not DBTaskResult.objects.ready().exists()


def kill_claimant(entered: Path, processes: list[subprocess.Popen[bytes]]) -> dict[str, Any]:
    """``kill -9`` the process at the gate (RQ's work horse, or db_worker itself), its worker and
    whatever else the worker started (RQ's scheduler), as a lost host would lose them."""
    pid = int(entered.read_text().split()[0])
    parent = parent_of(pid)
    [worker] = [process for process in processes if process.pid in (pid, parent)]
    for doomed in [pid, *children_of(worker.pid)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(doomed, signal.SIGKILL)
    worker.kill()
    worker.wait(30)
    return {"pid": pid, "worker": worker.pid, "returncode": worker.returncode}


def children_of(pid: int) -> list[int]:
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                if parent_of(int(entry.name)) == pid:
                    children.append(int(entry.name))
    return children


def check(report: dict[str, Any], entries: list[str]) -> list[str]:
    """What makes the run fail: a double or missing run, a stranded answer, a lasting figure."""
    failures = []
    if report["paid_twice"] or report["never_paid"]:
        failures.append(f"paid twice: {report['paid_twice']}, never paid: {report['never_paid']}")
    if report["stranded"]:
        failures.append(f"not continued: {report['states']}")
    if any(report["figures"].values()):
        failures.append(f"turnstate_status figures: {report['figures']}")
    if len(entries) != 2 or entries[0] == entries[1] or report["killed"]["paid"] != 1:
        failures.append(f"the killed worker's pause: entered by {entries}, paid {report['killed']['paid']}")
    return failures


def markdown(reports: list[dict[str, Any]]) -> str:
    lines = [
        "| backend | workers | pauses | continuations/s | latency p50 | latency p99 | paid twice | "
        "stranded | killed worker's pause |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in reports:
        killed = r["killed"]
        outcome = (
            f"pid {killed['entered_by'][0]} killed ({killed.get('state_after_kill', '?')}) → stalled → "
            f"continued by pid {killed['entered_by'][-1]}, paid {killed['paid']}"
            if len(killed["entered_by"]) == 2
            else f"entered by {killed['entered_by']}"
        )
        lines.append(
            f"| {BACKEND_NAMES[r['backend']]} | {r['workers']} | {r['pauses']} | "
            f"{r['continuations_per_second']} | {r['latency_p50_ms'] / 1000:.1f} s | "
            f"{r['latency_p99_ms'] / 1000:.1f} s | "
            f"{r['paid_twice']} | {r['stranded']} | {outcome} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", required=True, help="postgres://... (dropped and created anew)")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--pauses", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8, help="concurrent HTTP clients answering")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--backends", nargs="+", choices=list(WORKER_COMMANDS), default=list(WORKER_COMMANDS))
    parser.add_argument("--timeout", type=float, default=1800, help="seconds a run may take to settle")
    parser.add_argument("--markdown", action="store_true", help="also print the README's table")
    parser.add_argument(
        "--output", type=Path, default=REPO_ROOT / "bench" / "results" / "soak-workers-postgresql.json"
    )
    args = parser.parse_args()

    fresh_database(args.database)
    base_env = environment(args.database, args.redis, "rq")
    django_command(base_env, "migrate", "-v", "0")
    os.environ.update(base_env)
    import django

    django.setup()
    load = os.getloadavg()
    reports = []
    with tempfile.TemporaryDirectory(prefix="soak-workers-") as logs:
        for queue in args.backends:
            env = environment(args.database, args.redis, queue)
            for workers in args.workers:
                report = run(args, queue, workers, env, Path(logs))
                print(json.dumps(report), flush=True)
                reports.append(report)
                if report["failures"]:
                    keep = REPO_ROOT / "bench" / "results" / f"soak-workers-{queue}-{workers}-logs.tmp"
                    subprocess.run(["cp", "-r", logs, str(keep)], check=False)
    summary = {
        "load_before": [round(x, 2) for x in load],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(summary))
    args.output.write_text(json.dumps({**summary, "runs": reports}, indent=2) + "\n")
    if args.markdown:
        print(markdown(reports))
    return 1 if any(report["failures"] for report in reports) else 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
    sys.exit(130)
