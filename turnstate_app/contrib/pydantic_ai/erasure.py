"""Erasing conversations with everything that shares their messages.

A fork shares its source's entries rather than copying them, so erasing a conversation's
messages means erasing every conversation that reaches them: its forks, their forks, and
any conversation whose stored entries continue from them (found even when the fork in
between was deleted already). ``erase_conversations`` deletes those records and every
entry they stored; entries of the conversation a fork came from are not touched.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from turnstate_app.contrib.pydantic_ai.models import StoredConversation, StoredEntry

CHUNK = 500  # ids per IN (...): far under every database's parameter limit


def family_of(alias: str, conversation_ids: Iterable[str]) -> set[str]:
    """These conversations and every one whose history runs into their entries (forks, transitively)."""
    family = set(conversation_ids)
    frontier = set(family)
    while frontier:
        part = sorted(frontier)
        stored = StoredEntry.objects.using(alias).filter(conversation_id__in=part).values("entry_id")
        found = set(
            StoredConversation.objects.using(alias)
            .filter(forked_from__in=part)
            .values_list("conversation_id", flat=True)
        )
        found |= set(
            StoredConversation.objects.using(alias)
            .filter(forked_at__in=stored)
            .values_list("conversation_id", flat=True)
        )
        found |= set(
            StoredEntry.objects.using(alias)
            .filter(parent_id__in=stored)
            .values_list("conversation_id", flat=True)
        )
        frontier = found - family
        family |= frontier
    return family


def erase_conversations(alias: str, conversation_ids: Iterable[str]) -> int:
    """Delete these conversations, their forks and every entry they stored; return the rows deleted."""
    deleted = 0
    with transaction.atomic(using=alias):
        family = sorted(family_of(alias, conversation_ids))
        for start in range(0, len(family), CHUNK):
            part = family[start : start + CHUNK]
            deleted += StoredConversation.objects.using(alias).filter(conversation_id__in=part).delete()[0]
            deleted += StoredEntry.objects.using(alias).filter(conversation_id__in=part).delete()[0]
    return deleted
