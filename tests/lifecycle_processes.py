"""Continuations run in child processes (spawned), for the exactly-once and turn-taking tests.

Each run leaves a row in the store (thread ``runs``), so the parent counts the runs and
reads when each entered and left from the database alone.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from tests.processes import boot_django

RUNS_THREAD = "runs"


def record_run(label: str, entered: float, left: float) -> None:
    """One row per run: who ran, when it entered and when it left."""
    from turnstate_app.ports import ModelCheckpointCommandPort

    ModelCheckpointCommandPort().write_metadata_sync(
        thread_id=RUNS_THREAD,
        checkpoint_id=label,
        key=f"run:{os.getpid()}:{time.monotonic_ns()}",
        value=json.dumps({"pid": os.getpid(), "entered": entered, "left": left}),
        task_id=None,
    )


def answer_and_continue(
    settings_dict: dict[str, Any], rounds: list[tuple[str, str]], barrier: Any, results: Any
) -> None:
    """Each round: wait for the other racer, answer ``token``, then continue; report
    (label, pid, ran, reason, output), or the error as the reason with ``ran`` None."""
    boot_django(settings_dict)
    from django.db import connection

    from turnstate_app.pauses import Continuation, continue_once, resume_pause

    connection.ensure_connection()
    try:
        for token, label in rounds:

            def run(continuation: Continuation, label: str = label) -> int:
                entered = time.time()
                time.sleep(0.1)
                record_run(label, entered, time.time())
                return len(continuation.members)

            barrier.wait()
            try:
                result = continue_once(resume_pause(token, {"pid": os.getpid()}), run)
                results.put((label, os.getpid(), result.ran, result.reason, result.output))
            except Exception as exc:
                results.put((label, os.getpid(), None, f"{type(exc).__name__}: {exc}", None))
    finally:
        connection.close()


def continue_answered(
    settings_dict: dict[str, Any], jti: str, label: str, hold: float, barrier: Any, results: Any
) -> None:
    """Wait for the other racer, then continue an answered pause, holding the run ``hold`` seconds."""
    boot_django(settings_dict)
    from django.db import connection

    from turnstate_app.models import Pause
    from turnstate_app.pauses import Continuation, continue_once, rebuild_resumed
    from turnstate_app.ports import get_default_store

    def run(continuation: Continuation) -> str:
        entered = time.time()
        time.sleep(hold)
        record_run(label, entered, time.time())
        return continuation.resumed.claims.jti

    resumed = rebuild_resumed(Pause.objects.get(jti=jti), get_default_store())
    barrier.wait()
    try:
        result = continue_once(resumed, run)
        results.put((jti, result.ran, result.reason))
    except Exception as exc:
        results.put((jti, None, f"{type(exc).__name__}: {exc}"))
    finally:
        connection.close()


def runs(label: str) -> list[dict[str, float]]:
    """The runs recorded under ``label``, in the order they entered (read in the parent)."""
    from turnstate_app.models import CheckpointMetadata

    rows = CheckpointMetadata.objects.filter(thread_id=RUNS_THREAD, checkpoint_id=label)
    return sorted((json.loads(row.value) for row in rows), key=lambda run: run["entered"])
