"""The graph, resume handlers and task worker of ``tests/test_after_answer_faults.py``.

``pay`` asks one question ("Pay EUR 120 to ACME?") and then pays: one row per payment in the
store (:func:`payments`), so a test counts payments across processes. Given a ``gate`` (a file
path) in its state, the node first writes its pid to ``<gate>.entered`` and waits for the file,
so a worker can be killed after its claim and before the payment.
"""

from __future__ import annotations

import operator
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Annotated, Any

from django.db import OperationalError, connection
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import Interrupt, interrupt
from typing_extensions import TypedDict

from tests.contrib.langgraph.approvals import config, record, runs
from tests.contrib.langgraph.keyed_rows import rekey
from tests.contrib.raw_edits import raw_update
from tests.demo_runs import ROOT, this_tree
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver, pause_interrupts
from turnstate_app.contrib.langgraph.models import CheckpointWrite
from turnstate_app.handoff import enqueue_continuation
from turnstate_app.models import Pause
from turnstate_app.pauses import MintedPause, ResumedPause

NAME = "after-answer-pay"
AGENTS = {NAME: "tests.after_answer_support.pay"}
WORKER_SETTINGS = "tests.settings_after_answer_worker"

ACCEPTS_TEXT = True
"""The node takes a plain "yes"; False: it reads ``answer["approved"]``, a TypeError on text."""


class PayState(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    gate: str


def _pay(state: PayState, config: RunnableConfig) -> dict[str, Any]:
    answer = interrupt({"question": "Pay EUR 120 to ACME?"})
    approved = answer == "yes" if ACCEPTS_TEXT and isinstance(answer, str) else bool(answer["approved"])
    if state.get("gate"):
        wait_at(Path(state["gate"]))
    record(config, "pay")  # the side effect: one row per payment
    return {"log": [f"paid:{approved}"]}


def wait_at(gate: Path, timeout: float = 120) -> None:
    """Say this process got here (its pid in ``<gate>.entered``), then wait for ``gate`` to exist."""
    with open(f"{gate}.entered", "a") as entered:
        entered.write(f"{os.getpid()}\n")
    deadline = time.monotonic() + timeout
    while not gate.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{gate} never appeared")
        time.sleep(0.05)


def build(saver: DjangoCheckpointSaver) -> Any:
    builder = StateGraph(PayState)
    builder.add_node("pay", _pay)
    builder.add_edge(START, "pay")
    builder.add_edge("pay", END)
    return builder.compile(checkpointer=saver, name=NAME)


pay = build(DjangoCheckpointSaver())


def paused(gate: Path | None = None) -> tuple[str, MintedPause]:
    """A new thread of ``pay``, stopped at its question, and the pause minted for it."""
    thread = f"pay-{uuid.uuid4().hex[:12]}"
    pay.invoke({"log": [], **({"gate": str(gate)} if gate else {})}, config(thread))
    [minted] = pause_interrupts(pay, config(thread), run_id=thread, session_id="s")
    return thread, minted


def payments(thread: str) -> int:
    return runs(thread, "pay")


def change_question(thread: str) -> None:
    """Rewrite the pending interrupt's stored value with its MAC, as a bug of a process holding
    ``SECRET_KEY`` would: another question (an edit at rest without it fails the row's MAC)."""
    serde = DjangoCheckpointSaver().serde
    rows = CheckpointWrite.objects.filter(thread_id=thread, channel="__interrupt__")
    edited = 0
    for pk, kind, blob in rows.values_list("pk", "type", "blob"):
        interrupts = serde.loads_typed((kind, bytes(blob)))
        changed = type(interrupts)(
            Interrupt(value={"question": "Pay EUR 9,999 to ACME?"}, id=i.id) for i in interrupts
        )
        raw_update(CheckpointWrite, pk, "blob", serde.dumps_typed(changed)[1])
        rekey(CheckpointWrite, pk=pk)  # as the app's own code would write it: the question check refuses
        edited += 1
    assert edited


# -- resume handlers with a fault -------------------------------------------------------------

_BROKER_DOWN_FOR: set[str] = set()


def enqueue_after_one_failure(resumed: ResumedPause) -> None:
    """``enqueue_continuation``, whose broker is down the first time each pause is handed to it."""
    if resumed.claims.jti not in _BROKER_DOWN_FOR:
        _BROKER_DOWN_FOR.add(resumed.claims.jti)
        raise ConnectionError("the task broker refused the connection")
    enqueue_continuation(resumed)


COMPLETION_WRITES: dict[str, list[str]] = {}
"""Per jti, each UPDATE that set the state to continued: "failed" (made to) or "written"."""


def enqueue_failing_the_first_completion(resumed: ResumedPause) -> None:
    """``enqueue_continuation`` (the task runs right here on the ImmediateBackend), with the first
    UPDATE that sets the pause ``continued`` failing as a dropped connection would."""
    writes = COMPLETION_WRITES.setdefault(resumed.claims.jti, [])

    def fail_first(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if (
            sql.lstrip().upper().startswith("UPDATE")
            and Pause._meta.db_table in sql
            and "continued" in (params or ())
        ):
            writes.append("written" if writes else "failed")
            if writes == ["failed"]:
                raise OperationalError("server closed the connection unexpectedly")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(fail_first):
        enqueue_continuation(resumed)


# -- django-tasks-db's worker, in a process of its own ----------------------------------------


def worker_command(database: str, *, batch: bool = True) -> tuple[list[str], dict[str, str]]:
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    env.update(DJANGO_SETTINGS_MODULE=WORKER_SETTINGS, TURNSTATE_WORKER_DB=database)
    command = [sys.executable, "-m", "django", "db_worker", "--no-startup-delay", "--no-reload"]
    return [*command, "--batch"] if batch else command, this_tree(env)


def start_worker(database: str, log: Path) -> subprocess.Popen[bytes]:
    """A worker that keeps running (killed by the test); its output goes to ``log``."""
    command, env = worker_command(database, batch=False)
    with open(log, "wb") as out:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


def run_worker(database: str) -> subprocess.CompletedProcess[str]:
    """A worker that runs every task enqueued, then exits."""
    command, env = worker_command(database)
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
