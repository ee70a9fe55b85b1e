"""The core's erasure and purge reach the conversations (they hold the transcripts).

A pause's ``thread_id`` is its conversation's id (``pause_deferred`` mints them so).
``erase_thread`` deletes the conversation, every fork of it, and every message they
stored. A purge batch (old pauses, a deleted user's pauses) does the same for those of
its threads that no pause is left on: a conversation another pause still points at is
kept, or that pause could not be continued; so is one whose fork still has pauses.
Conversations that never paused are not the pause ledger's to purge: use the store's
``delete``.
"""

from __future__ import annotations

from typing import Any

from django.db import router

from turnstate_app.contrib._retention import unpaused_stored_threads
from turnstate_app.contrib.pydantic_ai.erasure import erase_conversations, family_of
from turnstate_app.contrib.pydantic_ai.models import StoredConversation
from turnstate_app.models import Pause
from turnstate_app.signals import pauses_purged, thread_erased


def erase_thread_conversation(sender: Any, thread_id: str, **_: Any) -> None:
    erase_conversations(router.db_for_write(StoredConversation), [thread_id])


def purge_orphaned_conversations(sender: Any, thread_ids: list[str], using: str, **_: Any) -> None:
    alias, stored = unpaused_stored_threads(StoredConversation, "conversation_id", thread_ids, using)
    doomed: list[str] = []
    for conversation_id in stored:
        forks = family_of(alias, [conversation_id]) - {conversation_id}
        # A fork with pauses of its own needs the entries it shares: it must stay resumable.
        if not forks or not Pause.objects.using(using).filter(thread_id__in=sorted(forks)).exists():
            doomed.append(conversation_id)
    if doomed:
        erase_conversations(alias, doomed)


def connect_retention() -> None:
    thread_erased.connect(erase_thread_conversation, dispatch_uid="turnstate_pydantic_ai_erase_thread")
    pauses_purged.connect(purge_orphaned_conversations, dispatch_uid="turnstate_pydantic_ai_purge")
