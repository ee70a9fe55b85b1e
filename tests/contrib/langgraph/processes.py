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
