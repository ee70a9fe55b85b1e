"""The worker's side: continue a turn from the store alone, in whatever process runs the task."""

from __future__ import annotations

import os

from agents.compat import task
from agents.models import AgentRun
from turnstate_app.models import Pause
from turnstate_app.pauses import rebuild_resumed
from turnstate_app.ports import get_default_store


@task()
def continue_turn(jti: str) -> str:
    """Rebuild the paused turn from the database, append the answer and the agent's next message."""
    resumed = rebuild_resumed(Pause.objects.get(jti=jti), get_default_store())
    run = AgentRun.objects.get(run_id=resumed.claims.run_id)
    if resumed.checkpoint is None:
        run.status = "stranded"
        run.save(update_fields=["status", "updated_at"])
        return "no turn state: answered, but the run cannot be continued"
    answer = resumed.answer
    run.transcript = [
        *resumed.checkpoint.messages,
        {"role": "tool", "tool_call_id": resumed.claims.tool_call_id, "content": answer},
        {
            "role": "assistant",
            "content": f"Booked: the offsite is the week of {answer}. Calendar invites are on their way.",
        },
    ]
    run.status = "continued"
    run.continued_by_pid = os.getpid()
    run.save(update_fields=["transcript", "status", "continued_by_pid", "updated_at"])
    return "continued"


@task()
def continue_trip(jti: str) -> dict[str, object]:
    """Continue the LangGraph trip from an answered pause: exactly once, whoever delivers it."""
    from agents.trip import trip_graph
    from turnstate_app.contrib.langgraph import continue_graph

    resumed = rebuild_resumed(Pause.objects.get(jti=jti), get_default_store())
    result = continue_graph(trip_graph(), resumed)
    return {
        "pid": os.getpid(),
        "ran": result.ran,
        "reason": result.reason,
        "minted": [minted.claims.jti for minted in result.minted],
    }
