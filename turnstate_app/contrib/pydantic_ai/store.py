"""``DjangoConversationStore``: PydanticAI's ``ConversationStore`` on Django's database.

The five primitives follow their docstrings in ``pydantic_ai.conversation_store``:

- ``write_record`` stores the record and its new entries in one transaction, and raises
  ``ConversationConflict`` for each of the three cases the docstring names: the stored
  revision is not ``expected_revision`` (a conditional ``UPDATE`` that changed no row);
  a record exists when ``expected_revision`` is None (the ``INSERT`` hit the unique key:
  insert-if-absent, never a look first); ``head_id`` (or a new entry's parent) names an
  entry neither stored nor new. Held across processes: the database decides each case.
- ``delete_record`` deletes only the record with ``expected_revision``, and with it the
  entries that conversation stored, unless another conversation (a fork) still reaches
  them: those stay until that fork goes too (``erase_thread`` removes forks as well).
- ``read_history`` is overridden: one recursive query whatever the length, so ``load``
  costs two queries.

PydanticAI's ``save`` and ``load`` are coroutines: in sync code ``store.save(result)`` saves
nothing. ``save_sync`` and ``load_sync`` are their forms for sync code.

Every statement runs on the primary (``router.db_for_write``) unless ``using`` names a
database: a revision read from a lagging replica would turn every save into a conflict.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from django.db import IntegrityError, router, transaction
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import (
    ConversationConflict,
    ConversationEntry,
    ConversationRecord,
    ConversationStore,
)
from pydantic_ai.run import AgentRunResult

from turnstate_app.contrib._text import refuse_lone_surrogate
from turnstate_app.contrib.pydantic_ai import history
from turnstate_app.contrib.pydantic_ai.codec import (
    RECORD_COLUMNS,
    entry_from,
    message_json,
    record_from,
    record_values,
)
from turnstate_app.contrib.pydantic_ai.keys import (
    CONVERSATION_ID_MAX_LENGTH,
    ENTRY_ID_MAX_LENGTH,
    KIND_MAX_LENGTH,
    REVISION_MAX_LENGTH,
    SCOPE_MAX_LENGTH,
    check_text,
)
from turnstate_app.contrib.pydantic_ai.models import StoredConversation, StoredEntry

LOCK_CHUNK = 500  # ids per locking read: far under every database's parameter limit


class DjangoConversationStore(ConversationStore):
    """Conversations in two tables of Django's database (app ``turnstate_app.contrib.pydantic_ai``)."""

    def __init__(self, *, using: str | None = None) -> None:
        self.using = using

    @property
    def alias(self) -> str:
        return self.using or router.db_for_write(StoredConversation)

    # -- PydanticAI's save and load for sync code (views, commands, workers) ---------------

    def save_sync(
        self, conversation: Conversation | AgentRunResult[Any], *, scope: str | None = None
    ) -> list[ConversationEntry]:
        """``save`` for sync code, where ``store.save(result)`` is a coroutine nobody awaits.

        Its statements run on the calling thread's connection, inside the caller's transaction.
        """
        saved: list[ConversationEntry] = async_to_sync(self.save)(conversation, scope=scope)
        return saved

    def load_sync(
        self, conversation_id: str, *, limit: int | None = None, scope: str | None = None
    ) -> Conversation | None:
        """``load`` for sync code."""
        loaded: Conversation | None = async_to_sync(self.load)(conversation_id, limit=limit, scope=scope)
        return loaded

    # -- the five primitives -------------------------------------------------------------

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        return await sync_to_async(self.read_record_sync, thread_sensitive=True)(conversation_id)

    async def read_records(
        self, *, scope: str | None = None, limit: int | None = None
    ) -> Sequence[ConversationRecord]:
        return await sync_to_async(self.read_records_sync, thread_sensitive=True)(scope=scope, limit=limit)

    async def write_record(
        self,
        record: ConversationRecord,
        *,
        new_entries: Sequence[ConversationEntry] = (),
        expected_revision: str | None,
    ) -> None:
        await sync_to_async(self.write_record_sync, thread_sensitive=True)(
            record, new_entries=new_entries, expected_revision=expected_revision
        )

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
        await sync_to_async(self.delete_record_sync, thread_sensitive=True)(
            conversation_id, expected_revision=expected_revision
        )

    async def read_entry(self, entry_id: str) -> ConversationEntry:
        return await sync_to_async(self.read_entry_sync, thread_sensitive=True)(entry_id)

    async def read_history(self, head_id: str | None, *, limit: int | None = None) -> list[ConversationEntry]:
        return await sync_to_async(history.read_history, thread_sensitive=True)(self.alias, head_id, limit)

    # -- their synchronous bodies (for callers already on a worker thread) -----------------

    def read_record_sync(self, conversation_id: str) -> ConversationRecord | None:
        _readable("conversation_id", conversation_id)
        row = (
            StoredConversation.objects.using(self.alias)
            .filter(conversation_id=conversation_id)
            .values_list(*RECORD_COLUMNS)
            .first()
        )
        return None if row is None else record_from(row)

    def read_records_sync(
        self, *, scope: str | None = None, limit: int | None = None
    ) -> list[ConversationRecord]:
        _readable("scope", scope)
        rows = StoredConversation.objects.using(self.alias).order_by("-updated_at", "-pk")
        if scope is not None:
            rows = rows.filter(scope=scope)
        found = rows.values_list(*RECORD_COLUMNS)
        if limit is not None:
            found = found[:limit]
        return [record_from(row) for row in found]

    def read_entry_sync(self, entry_id: str) -> ConversationEntry:
        _readable("entry id", entry_id)
        row = (
            StoredEntry.objects.using(self.alias)
            .filter(entry_id=entry_id)
            .values_list("entry_id", "parent_id", "kind", "message")
            .first()
        )
        if row is None:
            raise KeyError(entry_id)
        return entry_from(*row)

    def write_record_sync(
        self,
        record: ConversationRecord,
        *,
        new_entries: Sequence[ConversationEntry] = (),
        expected_revision: str | None,
    ) -> None:
        conversation_id = _checked_record(record)
        check_text("expected_revision", expected_revision, max_length=REVISION_MAX_LENGTH, optional=True)
        rows, anchors = _entry_rows(conversation_id, new_entries)
        if record.head_id is not None and record.head_id not in {row.entry_id for row in rows}:
            anchors.add(record.head_id)
        values = record_values(record)
        alias = self.alias
        with transaction.atomic(using=alias):
            if anchors:
                # Locked: a concurrent delete that would release them waits, or has released them.
                found = set(
                    StoredEntry.objects.using(alias)
                    .select_for_update()
                    .filter(entry_id__in=sorted(anchors))
                    .values_list("entry_id", flat=True)
                )
                if found != anchors:
                    raise ConversationConflict(conversation_id)
            if expected_revision is None:
                try:
                    with transaction.atomic(using=alias):
                        StoredConversation.objects.using(alias).create(
                            conversation_id=conversation_id, **values
                        )
                except IntegrityError:
                    raise ConversationConflict(conversation_id) from None
            else:
                changed = (
                    StoredConversation.objects.using(alias)
                    .filter(conversation_id=conversation_id, revision=expected_revision)
                    .update(**values)
                )
                if changed != 1:
                    raise ConversationConflict(conversation_id)
            if rows:
                try:
                    with transaction.atomic(using=alias):
                        StoredEntry.objects.using(alias).bulk_create(rows)
                except IntegrityError:  # an entry with one of these ids is stored: entries never change
                    raise ConversationConflict(conversation_id) from None

    def delete_record_sync(self, conversation_id: str, *, expected_revision: str) -> None:
        _readable("conversation_id", conversation_id)
        _readable("expected_revision", expected_revision)
        alias = self.alias
        with transaction.atomic(using=alias):
            own = StoredEntry.objects.using(alias).filter(conversation_id=conversation_id)
            # Lock the entries first (as a writer locks the entry it extends, before its record):
            # a fork being written into them commits before this decides, or finds them gone.
            # Locked through their entry ids, the path a writer's lock takes: on InnoDB, locking
            # through another index first deadlocks with a writer locking the same row.
            ids = list(own.order_by("entry_id").values_list("entry_id", flat=True))
            for start in range(0, len(ids), LOCK_CHUNK):
                part = ids[start : start + LOCK_CHUNK]
                locked = StoredEntry.objects.using(alias).select_for_update().filter(entry_id__in=part)
                list(locked.order_by("entry_id").values_list("entry_id", flat=True))
            deleted, _ = (
                StoredConversation.objects.using(alias)
                .filter(conversation_id=conversation_id, revision=expected_revision)
                .delete()
            )
            if not deleted:
                raise ConversationConflict(conversation_id)
            if not _reached_from_elsewhere(alias, conversation_id):
                own.delete()


def _readable(field: str, value: object) -> None:
    """A key a read looks up may be anything, but a lone surrogate cannot reach the driver."""
    if isinstance(value, str):
        refuse_lone_surrogate(field, value)


def _reached_from_elsewhere(alias: str, conversation_id: str) -> bool:
    """Whether another conversation's history runs into entries ``conversation_id`` stored.

    Only a fork can: it starts at one of them (``forked_at``), or a later fork of a fork
    stored entries that continue from one of them.
    """
    own_ids = StoredEntry.objects.using(alias).filter(conversation_id=conversation_id).values("entry_id")
    continued = (
        StoredEntry.objects.using(alias)
        .filter(parent_id__in=own_ids)
        .exclude(conversation_id=conversation_id)
        .exists()
    )
    return continued or StoredConversation.objects.using(alias).filter(forked_at__in=own_ids).exists()


def _checked_record(record: ConversationRecord) -> str:
    conversation_id = check_text(
        "conversation_id", record.conversation_id, max_length=CONVERSATION_ID_MAX_LENGTH
    )
    assert conversation_id is not None
    check_text("scope", record.scope, max_length=SCOPE_MAX_LENGTH, optional=True)
    check_text("revision", record.revision, max_length=REVISION_MAX_LENGTH)
    for field in ("head_id", "forked_at"):
        check_text(field, getattr(record, field), max_length=ENTRY_ID_MAX_LENGTH, optional=True)
    check_text("forked_from", record.forked_from, max_length=CONVERSATION_ID_MAX_LENGTH, optional=True)
    for tip in record.branches:
        check_text("branches", tip, max_length=ENTRY_ID_MAX_LENGTH)
    return conversation_id


def _entry_rows(
    conversation_id: str, new_entries: Sequence[ConversationEntry]
) -> tuple[list[StoredEntry], set[str]]:
    """Rows for the new entries, and the stored entries they continue (which must exist).

    An entry's parent is an earlier new entry or a stored one; a parent named later in
    ``new_entries`` is looked up in the store, so entries can never form a cycle.
    """
    rows: list[StoredEntry] = []
    seen: set[str] = set()
    anchors: set[str] = set()
    for entry in new_entries:
        entry_id = check_text("entry id", entry.id, max_length=ENTRY_ID_MAX_LENGTH)
        check_text("parent_id", entry.parent_id, max_length=ENTRY_ID_MAX_LENGTH, optional=True)
        check_text("kind", entry.kind, max_length=KIND_MAX_LENGTH)
        if entry.parent_id is not None and entry.parent_id not in seen:
            anchors.add(entry.parent_id)
        assert entry_id is not None
        seen.add(entry_id)
        rows.append(
            StoredEntry(
                entry_id=entry_id,
                parent_id=entry.parent_id,
                conversation_id=conversation_id,
                kind=entry.kind,
                message=message_json(entry.message),
            )
        )
    return rows, anchors
