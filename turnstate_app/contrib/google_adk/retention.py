"""The core's erasure and purge reach the sessions of a thread (and so their events).

A pause's ``thread_id`` is its ADK session's id, so ``erase_thread`` deletes the sessions with that
id (whatever their app or user) and, with them, their events. A purge batch does the same for those
of its threads that no pause is left on. App and user state belong to no session and stay.
"""

from __future__ import annotations

from typing import Any

from django.db import router

from turnstate_app.contrib._retention import unpaused_stored_threads
from turnstate_app.contrib.google_adk.models import StoredSession
from turnstate_app.signals import pauses_purged, thread_erased


def erase_threads(thread_ids: list[str]) -> int:
    """Delete the sessions (and their events) of these threads; the rows deleted."""
    if not thread_ids:
        return 0
    alias = router.db_for_write(StoredSession)
    return StoredSession.objects.using(alias).filter(session_id__in=thread_ids).delete()[0]


def erase_thread_sessions(sender: Any, thread_id: str, **_: Any) -> None:
    erase_threads([thread_id])


def purge_orphaned_sessions(sender: Any, thread_ids: list[str], using: str, **_: Any) -> None:
    _alias, sessions = unpaused_stored_threads(StoredSession, "session_id", thread_ids, using)
    erase_threads(sessions)


def connect_retention() -> None:
    thread_erased.connect(erase_thread_sessions, dispatch_uid="turnstate_google_adk_erase_thread")
    pauses_purged.connect(purge_orphaned_sessions, dispatch_uid="turnstate_google_adk_purge")
