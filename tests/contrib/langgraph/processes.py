"""Continuations run in child processes (spawned: a fresh interpreter, its own connections)."""

from __future__ import annotations

from typing import Any

from tests.processes import boot_django


def continue_elsewhere(
    settings_dict: dict[str, Any], graph: str, jti: str, barrier: Any, results: Any, racer: int
) -> None:
    """Rebuild the answered pause from the database, wait for every racer, continue the graph;
    put ``(racer, outcome)`` on ``results``."""
    boot_django(settings_dict)
    from django.db import connections

    from tests.contrib.langgraph import approvals
    from turnstate_app.contrib.langgraph import DjangoCheckpointSaver, continue_graph
    from turnstate_app.models import Pause
    from turnstate_app.pauses import rebuild_resumed
    from turnstate_app.ports import get_default_store

    outcome: dict[str, Any]
    try:
        resumed = rebuild_resumed(Pause.objects.get(jti=jti), get_default_store())
        built = getattr(approvals, graph)(DjangoCheckpointSaver())
        barrier.wait(timeout=60)
        result = continue_graph(built, resumed)
        outcome = {
            "ran": result.ran,
            "reason": result.reason,
            "minted": [m.claims.jti for m in result.minted],
        }
    except Exception as exc:
        outcome = {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        connections.close_all()
    results.put((racer, outcome))


def pause_elsewhere(
    settings_dict: dict[str, Any], threads: list[str], barrier: Any, results: Any, racer: int
) -> None:
    """For each thread in turn: wait for every racer, then ``pause_interrupts`` on its head.

    The ledger read is held open a moment (``already_paused`` then a sleep), so both racers
    read "nothing minted yet" unless something keeps them apart. Puts ``(racer, minted jtis
    or the error)`` on ``results``.
    """
    boot_django(settings_dict)
    import time

    from django.db import connections

    from tests.contrib.langgraph import approvals
    from turnstate_app.contrib.langgraph import DjangoCheckpointSaver, bridge, pause_interrupts

    read_ledger = bridge.already_paused  # type: ignore[attr-defined]

    def slow_read(*args: Any, **kwargs: Any) -> set[str]:
        taken = read_ledger(*args, **kwargs)
        time.sleep(0.2)
        return taken

    bridge.already_paused = slow_read  # type: ignore[attr-defined]
    outcome: Any
    try:
        graph = approvals.trip_approvals(DjangoCheckpointSaver())
        minted: list[str] = []
        for thread in threads:
            barrier.wait(timeout=60)
            found = pause_interrupts(graph, approvals.config(thread), run_id="r", session_id="s")
            minted.extend(m.claims.jti for m in found)
        outcome = minted
    except Exception as exc:
        outcome = f"{type(exc).__name__}: {exc}"
    finally:
        connections.close_all()
    results.put((racer, outcome))
