"""``enqueue_continuation``: a ready-made ``RESUME_HANDLER`` that hands an answer to a task worker.

It enqueues :func:`turnstate_app.tasks.continue_pause` with the pause's jti on the host's
``TASKS`` backend (``django-tasks-db``'s database backend and its ``db_worker``, or any
other). Django's ``ImmediateBackend`` runs the continuation right here, on the hand-off,
inside the request of the person who answered. A failed enqueue raises, so the pause stays
awaiting hand-off and ``turnstate_redeliver`` enqueues it again.
"""

from __future__ import annotations

from turnstate_app.pauses import ResumedPause


def enqueue_continuation(resumed: ResumedPause) -> None:
    """``RESUME_HANDLER``: enqueue ``continue_pause(jti)``; the worker continues it once."""
    from turnstate_app.tasks import continue_pause

    continue_pause.enqueue(resumed.claims.jti)
