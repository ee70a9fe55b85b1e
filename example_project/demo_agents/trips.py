"""A trip as its owner's front end (and the demo) sees it: the log, the questions, node runs, forks."""

from __future__ import annotations

from collections import Counter
from typing import Any

from demo_agents.models import NodeRun, Question
from demo_agents.trip import trip_graph
from turnstate_app.contrib.langgraph.models import Checkpoint
from turnstate_app.models import ContinuationState, Pause


def trip_state(thread_id: str, owner: Any) -> dict[str, Any]:
    """The owner's trip; the tokens of their own questions only."""
    state = trip_graph().get_state({"configurable": {"thread_id": thread_id}})
    parents = Counter(
        Checkpoint.objects.filter(thread_id=thread_id, checkpoint_ns="").values_list(
            "parent_checkpoint_id", flat=True
        )
    )
    pauses = Pause.objects.filter(thread_id=thread_id).select_related("owner").order_by("created_at", "pk")
    questions = {q.jti: q for q in Question.objects.filter(thread_id=thread_id, owner=owner)}
    return {
        "log": state.values.get("log", []),
        "waiting": [i.id for i in state.interrupts],
        "pauses": [
            {
                "jti": p.jti,
                "name": p.name,
                "interrupt_id": p.interrupt_id,
                "status": p.status,
                "owner": p.owner.username if p.owner else None,
                "continued": p.continuation == ContinuationState.CONTINUED,
                "failure": p.continuation_reason,
                "token": questions[p.jti].token if p.jti in questions else None,
                "question": questions[p.jti].request if p.jti in questions else None,
            }
            for p in pauses
        ],
        "node_runs": [
            {"node": r.node, "pid": r.pid} for r in NodeRun.objects.filter(thread_id=thread_id).order_by("pk")
        ],
        "checkpoints": sum(parents.values()),
        "forks": sum(1 for count in parents.values() if count > 1),
    }
