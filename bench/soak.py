"""Soak: 8 processes minting pauses and answering them over HTTP against PostgreSQL for N minutes.

Every token is answered twice, by two workers racing: exactly one must get 200 and the other
409. Exits non-zero on a double answer (two 200s), a lost answer (no 200, or a ledger row or
stored answer that does not match the 200), any 5xx, or the server's RSS growing more than 20%
between minute 1 and the end. Not part of the suite: ``make soak SOAK_MINUTES=5``.

The server is the example project under ``manage.py runserver --noreload`` (threaded, DEBUG
off), the same one ``make demo`` starts.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import queue
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = REPO_ROOT / "example_project"
USERNAME = "soak"
MAX_RSS_GROWTH = 0.20


def setup_django(database_url: str) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ["DJANGO_DEBUG"] = "0"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "example_project.settings")
    sys.path[:0] = [str(EXAMPLE), str(REPO_ROOT)]
    import django

    django.setup()


def create_database(url: str) -> None:
    import psycopg
    from psycopg import sql

    server, name = url.rsplit("/", 1)
    with psycopg.connect(f"{server}/postgres", autocommit=True, connect_timeout=5) as connection:
        if not connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def answer(base_url: str, api_token: str, token: str, value: Any) -> int:
    body = json.dumps({"token": token, "answer": value}).encode()
    request = urllib.request.Request(
        f"{base_url}/api/turnstate/pauses/resume/",
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Token {api_token}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except OSError:
        return 599  # no response at all counts as a server failure


def worker(
    index: int, database_url: str, base_url: str, api_token: str, deadline: float, tokens: Any, results: Any
) -> None:
    """Mint a pause, offer its token twice, answer the next two tokens offered; until the deadline."""
    setup_django(database_url)
    from django.contrib.auth import get_user_model

    from turnstate_app.pauses import mint_pause

    owner = get_user_model().objects.get(username=USERNAME)
    n = 0
    while time.monotonic() < deadline:
        n += 1
        minted = mint_pause(
            run_id=f"soak-{index}-{n}",
            session_id=f"soak-{index}",
            thread_id=f"soak-{index}-{n}",
            checkpoint_id="cp",
            scope_hash="soak",
            tool_call_id=f"call-{n}",
            request={"question": f"soak {index}/{n}"},
            prompt="soak",
            messages=[{"role": "user", "content": "soak"}],
            owner=owner,
        )
        results.put(("minted", minted.claims.jti, 0, None))
        tokens.put((minted.claims.jti, minted.token))
        tokens.put((minted.claims.jti, minted.token))
        for _ in range(2):  # as many answers as tokens offered, so the queue stays short
            try:
                jti, token = tokens.get(timeout=5)
            except queue.Empty:
                break
            value = {"by": index, "n": n}
            results.put(("answer", jti, answer(base_url, api_token, token, value), value))


def rss(pid: int) -> int:
    import psutil

    process = psutil.Process(pid)
    return int(process.memory_info().rss + sum(child.memory_info().rss for child in process.children(True)))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", required=True, help="postgres://... (created when missing)")
    parser.add_argument("--minutes", type=float, default=5)
    parser.add_argument("--workers", type=int, default=8)
    args = parser.parse_args()
    if args.minutes < 2:
        parser.error("--minutes must be at least 2 (RSS is compared from minute 1 to the end)")

    create_database(args.database)
    env = {**os.environ, "DATABASE_URL": args.database, "DJANGO_DEBUG": "0", "PYTHONUNBUFFERED": "1"}
    manage = [sys.executable, str(EXAMPLE / "manage.py")]
    subprocess.run([*manage, "migrate", "-v", "0"], env=env, check=True)
    setup_django(args.database)
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from turnstate_app.models import CheckpointMetadata, Pause

    Pause.objects.filter(session_id__startswith="soak-").delete()
    CheckpointMetadata.objects.filter(thread_id__startswith="soak-").delete()
    user, _ = get_user_model().objects.get_or_create(username=USERNAME)
    api_token = Token.objects.get_or_create(user=user)[0].key

    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    log = open(REPO_ROOT / "bench" / "results" / "soak-server.log.tmp", "wb")  # noqa: SIM115
    server = subprocess.Popen(
        [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"], env=env, stdout=log, stderr=log
    )
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{base_url}/api/turnstate/pauses/", timeout=2)
            except urllib.error.HTTPError:
                break  # 401/403: it answers
            except OSError:
                time.sleep(0.2)
        start = time.monotonic()
        deadline = start + args.minutes * 60
        context = multiprocessing.get_context("spawn")
        tokens, results = context.Queue(), context.Queue()
        workers = [
            context.Process(
                target=worker, args=(i, args.database, base_url, api_token, deadline, tokens, results)
            )
            for i in range(args.workers)
        ]
        for process in workers:
            process.start()
        events: list[tuple[str, str, int, Any]] = []
        offered: list[tuple[str, str]] = []  # tokens left once the workers stop taking them
        rss_minute_1: int | None = None
        while any(process.is_alive() for process in workers) or not results.empty():
            with contextlib.suppress(queue.Empty):
                events.append(results.get(timeout=0.5))
            if time.monotonic() > deadline:
                # Read what the workers still offer, or their queues never flush and they never exit.
                with contextlib.suppress(queue.Empty):
                    while True:
                        offered.append(tokens.get_nowait())
            if rss_minute_1 is None and time.monotonic() - start >= 60:
                rss_minute_1 = rss(server.pid)
        with contextlib.suppress(queue.Empty):
            while True:
                offered.append(tokens.get(timeout=1))
        for jti, token in offered:  # each token is tried twice in all: the second try is here
            drained = {"by": "drain"}
            events.append(("answer", jti, answer(base_url, api_token, token, drained), drained))
        for process in workers:
            process.join(10)
        rss_end = rss(server.pid)
    finally:
        server.terminate()
        server.wait(10)
        log.close()
    elapsed = time.monotonic() - start

    minted = {jti for kind, jti, _status, _value in events if kind == "minted"}
    statuses: Counter[int] = Counter()
    won: dict[str, list[Any]] = {jti: [] for jti in minted}
    for kind, jti, status, value in events:
        if kind == "answer":
            statuses[status] += 1
            if status == 200:
                won[jti].append(value)
    double = [jti for jti, values in won.items() if len(values) > 1]
    lost = [jti for jti, values in won.items() if not values]
    ledger = dict(Pause.objects.filter(jti__in=minted).values_list("jti", "status"))
    stored = {
        row.key.removeprefix("answer:"): json.loads(row.value)
        for row in CheckpointMetadata.objects.filter(thread_id__startswith="soak-", key__startswith="answer:")
    }
    lost += [jti for jti, values in won.items() if len(values) == 1 and stored.get(jti) != values[0]]
    lost += [jti for jti in minted if ledger.get(jti) != "answered"]
    server_errors = sum(count for status, count in statuses.items() if status >= 500)
    growth = (rss_end - rss_minute_1) / rss_minute_1 if rss_minute_1 else 0.0

    report = {
        "minutes": round(elapsed / 60, 2),
        "workers": args.workers,
        "pauses_minted": len(minted),
        "answers_sent": sum(statuses.values()),
        "answers_per_second": round(sum(statuses.values()) / elapsed, 1),
        "statuses": {str(status): count for status, count in sorted(statuses.items())},
        "double_answers": len(set(double)),
        "lost_answers": len(set(lost)),
        "server_errors": server_errors,
        "server_rss_mib_minute_1": round((rss_minute_1 or 0) / 2**20, 1),
        "server_rss_mib_end": round(rss_end / 2**20, 1),
        "server_rss_growth": round(growth, 3),
    }
    print(json.dumps(report, indent=2))
    failed = double or lost or server_errors or growth > MAX_RSS_GROWTH or not minted
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
