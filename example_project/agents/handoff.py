"""RESUME_HANDLER: hand an answered pause to the worker through Django's tasks API.

Called after the answer is committed, at least once (``turnstate_redeliver`` calls it
again). The scripted agent's task rewrites its transcript from the store, so running it
twice is harmless; the LangGraph trip's task goes through ``continue_graph``, which
continues a pause once across all processes, so a second delivery runs nothing.
"""

from __future__ import annotations

from agents.tasks import continue_trip, continue_turn
from turnstate_app.pauses import ResumedPause


def enqueue_continuation(resumed: ResumedPause) -> None:
    if resumed.claims.scope_hash.startswith("langgraph:"):
        continue_trip.enqueue(resumed.claims.jti)
    else:
        continue_turn.enqueue(resumed.claims.jti)
