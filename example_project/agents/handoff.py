"""RESUME_HANDLER: hand an answered pause to the worker through Django's tasks API.

Called after the answer is committed; enqueueing is idempotent enough for redelivery
(the task rewrites the run's transcript from the store, so running it twice is harmless).
"""

from __future__ import annotations

from django.apps import apps

from agents.tasks import continue_turn
from turnstate_app.pauses import ResumedPause


def enqueue_continuation(resumed: ResumedPause) -> None:
    if is_conversation(resumed.claims.thread_id):
        from agents.trip_tasks import continue_trip

        continue_trip.enqueue(resumed.claims.jti)  # the PydanticAI demo (make demo-pydantic-ai)
        return
    continue_turn.enqueue(resumed.claims.jti)


def is_conversation(thread_id: str) -> bool:
    """Whether the pause's thread is a PydanticAI conversation saved in the database."""
    if not apps.is_installed("turnstate_app.contrib.pydantic_ai"):
        return False
    from turnstate_app.contrib.pydantic_ai.models import StoredConversation

    return StoredConversation.objects.filter(conversation_id=thread_id).exists()
