"""RESUME_HANDLER: hand an answered pause to the worker through Django's tasks API.

Called after the answer is committed, at least once (``turnstate_redeliver`` calls it
again). The scripted agent's task rewrites its transcript from the store, so running it
twice is harmless; the LangGraph trip's task goes through ``continue_graph`` and the
PydanticAI booking's through ``continue_agent``, which continue a pause once across all
processes, so a second delivery runs nothing.
"""

from __future__ import annotations

from django.apps import apps

from agents.tasks import continue_trip, continue_turn
from turnstate_app.pauses import ResumedPause


def enqueue_continuation(resumed: ResumedPause) -> None:
    if resumed.claims.scope_hash.startswith("langgraph:"):
        continue_trip.enqueue(resumed.claims.jti)  # the LangGraph demo (make demo-langgraph)
    elif is_conversation(resumed.claims.thread_id):
        from agents.booking_tasks import continue_booking

        continue_booking.enqueue(resumed.claims.jti)  # the PydanticAI demo (make demo-pydantic-ai)
    else:
        continue_turn.enqueue(resumed.claims.jti)


def is_conversation(thread_id: str) -> bool:
    """Whether the pause's thread is a PydanticAI conversation saved in the database."""
    if not apps.is_installed("turnstate_app.contrib.pydantic_ai"):
        return False
    from turnstate_app.contrib.pydantic_ai.models import StoredConversation

    return StoredConversation.objects.filter(conversation_id=thread_id).exists()
