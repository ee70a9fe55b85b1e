"""The worker's side of the PydanticAI demo: continue the trip once, whoever delivers the answer."""

from __future__ import annotations

import os
from typing import Any

from agents.compat import task
from agents.models import AgentRun
from turnstate_app.models import Pause
from turnstate_app.pauses import rebuild_resumed
from turnstate_app.ports import get_default_store


def continue_booking_now(jti: str) -> dict[str, Any]:
    """Continue the trip the pause belongs to, if its group is complete and nobody did yet."""

    from agents.booking import transcript, trip_agent
    from turnstate_app.contrib.pydantic_ai import DjangoConversationStore, continue_agent

    store = DjangoConversationStore()
    resumed = rebuild_resumed(Pause.objects.get(jti=jti), get_default_store())
    # The agent's dependency is the run id, so a booking names its run.
    outcome = continue_agent(trip_agent(), resumed, store=store, deps=resumed.claims.run_id)
    if outcome.ran:
        conversation = store.load_sync(resumed.claims.thread_id)
        AgentRun.objects.filter(run_id=resumed.claims.run_id).update(
            status="continued",
            continued_by_pid=os.getpid(),
            transcript=transcript(conversation) if conversation is not None else [],
        )
    return {"ran": outcome.ran, "reason": outcome.reason, "output": outcome.output}


@task()
def continue_booking(jti: str) -> str:
    outcome = continue_booking_now(jti)
    return "continued" if outcome["ran"] else f"not continued: {outcome['reason']}"
