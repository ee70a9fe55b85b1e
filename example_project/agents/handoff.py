"""RESUME_HANDLER: hand an answered pause to the worker through Django's tasks API.

Called after the answer is committed; enqueueing is idempotent enough for redelivery
(the task rewrites the run's transcript from the store, so running it twice is harmless).
"""

from __future__ import annotations

from agents.tasks import continue_turn
from turnstate_app.pauses import ResumedPause


def enqueue_continuation(resumed: ResumedPause) -> None:
    continue_turn.enqueue(resumed.claims.jti)
