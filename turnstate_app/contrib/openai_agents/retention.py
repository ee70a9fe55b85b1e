"""The core's erasure and purge reach the run states and session items of a thread.

A pause's ``thread_id`` is its run's SDK session id (or the run id without a session), so
``erase_thread`` deletes the run states filed under that thread and that session's items. A
purge batch does the same for those of its threads that no pause is left on.
"""

from __future__ import annotations

from typing import Any

from django.db import router, transaction

from turnstate_app.contrib._retention import unpaused_stored_threads
from turnstate_app.contrib.openai_agents.models import StoredRunState, StoredSessionItem
from turnstate_app.signals import pauses_purged, thread_erased


def erase_threads(thread_ids: list[str]) -> int:
    """Delete the run states and session items of these threads; the rows deleted."""
    if not thread_ids:
        return 0
    states = router.db_for_write(StoredRunState)
    items = router.db_for_write(StoredSessionItem)
    with transaction.atomic(using=states):
        deleted = StoredRunState.objects.using(states).filter(thread_id__in=thread_ids).delete()[0]
        deleted += StoredSessionItem.objects.using(items).filter(session_id__in=thread_ids).delete()[0]
    return deleted


def erase_thread_runs(sender: Any, thread_id: str, **_: Any) -> None:
    erase_threads([thread_id])


def purge_orphaned_runs(sender: Any, thread_ids: list[str], using: str, **_: Any) -> None:
    _alias, states = unpaused_stored_threads(StoredRunState, "thread_id", thread_ids, using)
    erase_threads(states)


def connect_retention() -> None:
    thread_erased.connect(erase_thread_runs, dispatch_uid="turnstate_openai_agents_erase_thread")
    pauses_purged.connect(purge_orphaned_runs, dispatch_uid="turnstate_openai_agents_purge")
