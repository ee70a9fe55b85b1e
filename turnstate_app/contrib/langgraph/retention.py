"""The core's erasure and purge reach the saver's rows (they hold the transcripts).

``erase_thread`` removes the thread's checkpoints outright. A purge batch (old pauses,
a deleted user's pauses) removes those of its threads that no pause is left on: a
thread another pause still points at keeps its checkpoints, or that pause could not
be continued. Threads that never paused are not the pause ledger's to purge: use the
saver's ``delete_thread`` or ``prune``.
"""

from __future__ import annotations

from typing import Any

from django.db import router

from turnstate_app.contrib._retention import unpaused_stored_threads
from turnstate_app.contrib.langgraph.models import Checkpoint
from turnstate_app.signals import pauses_purged, thread_erased


def erase_thread_checkpoints(sender: Any, thread_id: str, **_: Any) -> None:
    # The saver's maintenance, and LangGraph with it, is imported when a thread is cleared, not
    # when the app starts: these handlers are connected in every process.
    from turnstate_app.contrib.langgraph.maintenance import delete_threads

    delete_threads(router.db_for_write(Checkpoint), [thread_id])


def purge_orphaned_checkpoints(sender: Any, thread_ids: list[str], using: str, **_: Any) -> None:
    alias, stored = unpaused_stored_threads(Checkpoint, "thread_id", thread_ids, using)
    if stored:
        from turnstate_app.contrib.langgraph.maintenance import delete_threads

        delete_threads(alias, stored)


def connect_retention() -> None:
    thread_erased.connect(erase_thread_checkpoints, dispatch_uid="turnstate_langgraph_erase_thread")
    pauses_purged.connect(purge_orphaned_checkpoints, dispatch_uid="turnstate_langgraph_purge")
