"""Continuations on RQ over Redis, many workers: every answer continued exactly once, none stranded.

Two ``rqworker --job-class django_tasks_rq.Job`` processes (``tests/settings_rq_worker.py``) on a
Redis server of the test's own work through the ``continue_pause`` jobs of 100 answered pauses of
``tests.after_answer_support.pay``, whose node pays (one row per payment). Every pause but
the gated one is delivered twice (the hand-off, then the same job again, as a broker that
delivers at least once would), so the two workers race on the same pauses. One pause's node
waits at a gate: the worker that claimed it is killed with ``kill -9`` before it pays, the
operator runs ``turnstate_redeliver --stalled --release`` and then ``turnstate_redeliver``,
and the other worker continues it.

In the end every pause is ``continued``, no ``turnstate_status`` figure counts anything, and
every node paid exactly once. Without the claim's condition (every delivery claims, even of a
continued pause) the duplicate deliveries run the pauses again, and nearly all end ``refused``
instead of ``continued``: the test fails.

PostgreSQL only (skipped elsewhere), the database of deployments with many workers on many
hosts. It needs the ``redis-server`` binary (``make redis`` installs it, and the Makefile's
PostgreSQL targets depend on it) and starts a server of its own, so CI legs running at once
never share a queue.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from importlib.util import find_spec
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from tests import after_answer_support as support
from tests.api_support import client_for
from tests.contrib.langgraph.approvals import RUNS
from tests.demo_runs import ROOT, this_tree
from tests.factories import UserFactory
from turnstate_app.models import CheckpointMetadata, Pause

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="PostgreSQL only: CI runs it on its PostgreSQL legs, with a Redis server of its own",
    ),
]

PAUSES = 100
KILLED_AT = 10  # the gated pause: the worker that claims it is killed before it pays
FIGURES = ("awaiting_handoff", "queued", "running", "stalled", "failed_continuations")
WORKER_SETTINGS = "tests.settings_rq_worker"
WAIT = 120.0


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A Redis server of this test's own (no other run's jobs reach its workers); its URL."""
    if find_spec("django_tasks_rq") is None:
        pytest.fail("django-tasks-rq is not installed: pip install -e '.[rq]'")
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is not installed: `make redis` installs and starts it")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        from redis import Redis

        client = Redis.from_url(url)
        until(lambda: ping(client), "redis-server never answered")
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def ping(client: Any) -> bool:
    from redis.exceptions import ConnectionError as RedisDown

    try:
        return bool(client.ping())
    except RedisDown:
        return False


@pytest.fixture
def on_rq(redis_url: str, settings: Any, turnstate_settings: Any) -> str:
    """This process hands answers to RQ (``enqueue_continuation``) on the test's Redis, and reads
    a continuation claimed more than a second ago as stalled."""
    settings.RQ_QUEUES = {"default": {"URL": redis_url}}
    settings.TASKS = {"default": {"BACKEND": "django_tasks_rq.RQBackend"}}
    turnstate_settings["AGENTS"] = dict(support.AGENTS)
    turnstate_settings["RESUME_HANDLER"] = "turnstate_app.handoff.enqueue_continuation"
    turnstate_settings["STALLED_AFTER"] = 1
    return redis_url


def until(done: Callable[[], bool], failure: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, failure
        time.sleep(0.1)


def start_worker(redis_url: str, log: Path) -> subprocess.Popen[bytes]:
    """``manage.py rqworker --job-class django_tasks_rq.Job``, as the docs run it, on the test's rows."""
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    env.update(
        DJANGO_SETTINGS_MODULE=WORKER_SETTINGS,
        TURNSTATE_WORKER_DB=str(connection.settings_dict["NAME"]),
        TURNSTATE_REDIS_URL=redis_url,
    )
    command = [sys.executable, "-m", "django", "rqworker", "--job-class", "django_tasks_rq.Job", "default"]
    with open(log, "wb") as out:
        return subprocess.Popen(command, cwd=ROOT, env=this_tree(env), stdout=out, stderr=subprocess.STDOUT)


def stop(workers: list[subprocess.Popen[bytes]], entered: Path) -> None:
    """Kill what is still running: the workers, and a work horse left waiting at the gate."""
    for worker in workers:
        if worker.poll() is None:
            worker.kill()
            worker.wait(timeout=30)
    for pid in entered.read_text().split() if entered.exists() else ():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)


def parent_of(pid: int) -> int:
    """The process that forked ``pid`` (RQ runs each job in a work horse its worker forks)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def payments() -> Counter[str]:
    """Payments per thread, counted once for all pauses."""
    rows = CheckpointMetadata.objects.filter(checkpoint_id=RUNS, key__startswith="pay:")
    return Counter(rows.values_list("thread_id", flat=True))


def figures() -> dict[str, int]:
    out = StringIO()
    call_command("turnstate_status", "--json", stdout=out)
    document = json.loads(out.getvalue())
    return {name: document[name] for name in FIGURES}


def redeliver(*args: str) -> str:
    out = StringIO()
    call_command("turnstate_redeliver", *args, stdout=out)
    return out.getvalue()


def settled(jtis: list[str]) -> bool:
    """No pause of ``jtis`` waits for a worker or is being run."""
    return not Pause.objects.filter(jti__in=jtis, continuation__in=("queued", "running")).exists()


def continuations(jtis: list[str]) -> Counter[str | None]:
    return Counter(Pause.objects.filter(jti__in=jtis).values_list("continuation", flat=True))


def test_two_rq_workers_continue_every_answer_once_and_a_killed_workers_pause_is_continued_by_the_other(
    on_rq: str, tmp_path: Path
) -> None:
    from django_rq import get_queue

    from turnstate_app.tasks import continue_pause

    gate = tmp_path / "gate"
    entered = Path(f"{gate}.entered")
    workers = [start_worker(on_rq, tmp_path / f"worker-{n}.log") for n in range(2)]
    try:
        minted = [support.paused(gate=gate if n == KILLED_AT else None) for n in range(PAUSES)]
        threads = [thread for thread, _ in minted]
        jtis = [pause.claims.jti for _, pause in minted]
        api = client_for(UserFactory.create(username="answering"))
        for n, (_, pause) in enumerate(minted):
            response = api.post(
                "/api/turnstate/pauses/resume/", {"token": pause.token, "answer": "yes"}, format="json"
            )
            assert response.status_code == 200, response.content
            if n != KILLED_AT:
                continue_pause.enqueue(pause.claims.jti)  # delivered a second time

        until(entered.exists, "no worker reached the gated node")
        horse = int(entered.read_text().split()[0])
        [killed] = [worker for worker in workers if worker.pid == parent_of(horse)]
        os.kill(horse, signal.SIGKILL)
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=30)
        [survivor] = [worker for worker in workers if worker is not killed]
        gated = jtis[KILLED_AT]
        assert Pause.objects.get(jti=gated).continuation == "running"  # claimed, then its worker died

        others = [jti for jti in jtis if jti != gated]
        until(lambda: settled(others), "the other pauses stayed queued or running")
        until(lambda: figures()["stalled"] == 1, "the killed worker's pause never showed as stalled")
        assert payments()[threads[KILLED_AT]] == 0

        assert "released 1 stalled continuation(s)" in redeliver("--stalled", "--release")
        gate.touch()  # from now on the node goes straight on
        assert "redelivered 1 pause(s); 0 failed again" in redeliver("--older-than", "0")
        until(lambda: settled(jtis), "the released pause stayed queued or running")
        until(lambda: get_queue("default").count == 0, "jobs were left on the queue")
        survivor.send_signal(signal.SIGTERM)  # a warm shutdown: the job it runs, if any, finishes
        assert survivor.wait(timeout=WAIT) == 0
    finally:
        stop(workers, entered)
    logs = "\n".join((tmp_path / f"worker-{n}.log").read_text() for n in range(2))

    assert killed.returncode == -signal.SIGKILL
    paid = payments()
    assert {thread: paid[thread] for thread in threads} == dict.fromkeys(threads, 1), logs
    assert continuations(jtis) == {"continued": PAUSES}
    assert figures() == dict.fromkeys(FIGURES, 0)
    first, second = entered.read_text().split()  # entered twice (killed, then continued), paid once
    assert int(first) == horse and int(second) != horse
