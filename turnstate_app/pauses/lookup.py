"""From a jti to what a continuation needs, in one call: for workers that get a jti, not a pause.

A task queue carries the jti only (it is small, JSON, and says nothing about the answer);
the worker rebuilds the rest from the database, on the primary, as the hand-off saw it.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.db import router

from turnstate_app.choices import PauseStatus
from turnstate_app.errors import PauseCheckpointNotFoundError, PauseNotAnsweredError
from turnstate_app.models import Pause
from turnstate_app.pauses.handoff import ResumedPause, rebuild_resumed
from turnstate_app.ports import get_default_store
from turnstate_app.ports.model import reading_primary


def answered_pause(jti: str) -> Pause:
    """The ledger row of an answered pause, read where it is written (a replica may lag)."""
    pause = Pause.objects.using(router.db_for_write(Pause)).filter(jti=jti).first()
    if pause is None:
        raise PauseCheckpointNotFoundError(f"no pause {jti!r} in the ledger")
    if pause.status != PauseStatus.ANSWERED:
        raise PauseNotAnsweredError(f"pause {jti!r} is {pause.status}, not answered: nothing to continue")
    return pause


def resumed(jti: str) -> ResumedPause:
    """The answered pause ``jti`` rebuilt from the database alone: claims, answer, turn state.

    ``PauseCheckpointNotFoundError`` when there is no such pause, ``PauseNotAnsweredError``
    when it is not answered.
    """
    pause = answered_pause(jti)
    with reading_primary():
        return rebuild_resumed(pause, get_default_store())


async def aresumed(jti: str) -> ResumedPause:
    """:func:`resumed` for async code."""
    return await sync_to_async(resumed, thread_sensitive=True)(jti)
