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
nothing. ``save_sync`` and ``load_sync`` are their forms for sync code. Each is PydanticAI's own
``save`` / ``load``, run to its end on the calling thread over the sync bodies of the primitives
(nothing in them suspends: they await only the primitives), so no event loop is started; the
awaited ``save`` and ``load`` make one hop onto Django's thread-sensitive executor for the whole
operation, not one per primitive.

Every statement runs on the primary (``router.db_for_write``) unless ``using`` names a
database: a revision read from a lagging replica would turn every save into a conflict.
"""

from __future__ import annotations

from collections.abc import Coroutine, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import IntegrityError, connections, router, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import (
    ConversationConflict,
    ConversationEntry,
    ConversationRecord,
    ConversationStore,
)
from pydantic_ai.run import AgentRunResult

from turnstate_app.contrib._text import refuse_lone_surrogate
from turnstate_app.contrib.pydantic_ai import history, statements
from turnstate_app.contrib.pydantic_ai.codec import (
    RECORD_COLUMNS,
    entry_from,
    record_from,
    record_values,
    sealed_message,
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
T = TypeVar("T")

_MISSED: Any = object()


class _KeptRecord:
    """One conversation's record as :func:`records_kept` keeps it: the last one read or written,
    handed to the next read of it and then let go."""

    def __init__(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        self.record: Any = _MISSED

    def take(self, conversation_id: str) -> Any:
        if conversation_id != self.conversation_id:
            return _MISSED
        record, self.record = self.record, _MISSED
        return record

    def keep(self, conversation_id: str, record: ConversationRecord | None) -> None:
        if conversation_id == self.conversation_id:
            self.record = record


_kept_record: ContextVar[_KeptRecord | None] = ContextVar("turnstate_pydantic_ai_kept_record", default=None)


@contextmanager
def records_kept(conversation_id: str) -> Iterator[None]:
    """Within the block, a read of ``conversation_id``'s record right after the store read or wrote
    it gets that record instead of a query: PydanticAI's ``save`` reads the record ``load`` read a
    moment before, and a continuation that pauses again reads the record ``save`` just wrote. For
    a continuation holding the conversation's turn; every write still names the revision it read,
    so a record changed meanwhile is refused (``ConversationConflict``) as it would be anyway."""
    token = _kept_record.set(_KeptRecord(conversation_id))
    try:
        yield
    finally:
        _kept_record.reset(token)


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
        return _completed(_OnThisThread(self).save(conversation, scope=scope))

    def load_sync(
        self, conversation_id: str, *, limit: int | None = None, scope: str | None = None
    ) -> Conversation | None:
        """``load`` for sync code."""
        return _completed(_OnThisThread(self).load(conversation_id, limit=limit, scope=scope))

    async def save(
        self, conversation: Conversation | AgentRunResult[Any], *, scope: str | None = None
    ) -> list[ConversationEntry]:
        """PydanticAI's ``save``, in one hop onto Django's thread-sensitive executor."""
        saved: list[ConversationEntry] = await sync_to_async(self.save_sync, thread_sensitive=True)(
            conversation, scope=scope
        )
        return saved

    async def load(
        self, conversation_id: str, *, limit: int | None = None, scope: str | None = None
    ) -> Conversation | None:
        """PydanticAI's ``load``, in one hop onto Django's thread-sensitive executor."""
        loaded: Conversation | None = await sync_to_async(self.load_sync, thread_sensitive=True)(
            conversation_id, limit=limit, scope=scope
        )
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
        kept = _kept_record.get()
        if kept is not None:
            record = kept.take(conversation_id)
            if record is _MISSED:
                record = self._fetch_record(conversation_id)
                kept.keep(conversation_id, record)
            return record  # type: ignore[no-any-return]
        return self._fetch_record(conversation_id)

    def _fetch_record(self, conversation_id: str) -> ConversationRecord | None:
        connection = connections[self.alias]
        with connection.cursor() as cursor:
            cursor.execute(statements.read_record(self.alias, RECORD_COLUMNS), [conversation_id])
            row = cursor.fetchone()
        if row is None:
            return None
        updated_at = RECORD_COLUMNS.index("updated_at")
        return record_from((*row[:updated_at], _aware(connection, row[updated_at]), *row[updated_at + 1 :]))

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
            .values_list(
                "entry_id",
                "parent_id",
                "kind",
                "message",
                "conversation_id",
                "encryption_key_id",
                "value_mac",
            )
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
        if record.head_id is not None and record.head_id not in {row[0] for row in rows}:
            anchors.add(record.head_id)
        values = record_values(record)
        alias = self.alias
        connection = connections[alias]
        adapt = connection.ops.adapt_datetimefield_value
        values["updated_at"] = adapt(values["updated_at"])
        columns = tuple(values)
        created_at = adapt(timezone.now())
        # One transaction; a refused write raises out of it, so it rolls back whole (no savepoints).
        with transaction.atomic(using=alias), connection.cursor() as cursor:
            if anchors:
                # Locked: a concurrent delete that would release them waits, or has released them.
                wanted = sorted(anchors)
                found: set[str] = set()
                for start in range(0, len(wanted), LOCK_CHUNK):
                    ids = wanted[start : start + LOCK_CHUNK]
                    cursor.execute(statements.lock_entries(alias, len(ids)), ids)
                    found.update(entry_id for (entry_id,) in cursor.fetchall())
                if found != anchors:
                    raise ConversationConflict(conversation_id)
            if expected_revision is None:
                try:
                    cursor.execute(
                        statements.insert_record(alias, columns), [conversation_id, *values.values()]
                    )
                except IntegrityError:
                    raise ConversationConflict(conversation_id) from None
            else:
                cursor.execute(
                    statements.update_record(alias, columns),
                    [*values.values(), conversation_id, expected_revision],
                )
                if cursor.rowcount != 1:
                    raise ConversationConflict(conversation_id)
            for start in range(0, len(rows), statements.ENTRIES_PER_INSERT):
                part = rows[start : start + statements.ENTRIES_PER_INSERT]
                params = [value for row in part for value in (*row, created_at)]
                try:
                    cursor.execute(statements.insert_entries(alias, len(part)), params)
                except IntegrityError:  # an entry with one of these ids is stored: entries never change
                    raise ConversationConflict(conversation_id) from None
        kept = _kept_record.get()
        if kept is not None:
            kept.keep(conversation_id, record)

    def delete_record_sync(self, conversation_id: str, *, expected_revision: str) -> None:
        _readable("conversation_id", conversation_id)
        kept = _kept_record.get()
        if kept is not None:
            kept.take(conversation_id)
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


class _OnThisThread(ConversationStore):
    """A store's primitives awaited without a hop: the sync bodies, on the thread that awaits them."""

    def __init__(self, store: DjangoConversationStore) -> None:
        self.store = store

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        return self.store.read_record_sync(conversation_id)

    async def read_records(
        self, *, scope: str | None = None, limit: int | None = None
    ) -> Sequence[ConversationRecord]:
        return self.store.read_records_sync(scope=scope, limit=limit)

    async def write_record(
        self,
        record: ConversationRecord,
        *,
        new_entries: Sequence[ConversationEntry] = (),
        expected_revision: str | None,
    ) -> None:
        self.store.write_record_sync(record, new_entries=new_entries, expected_revision=expected_revision)

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
        self.store.delete_record_sync(conversation_id, expected_revision=expected_revision)

    async def read_entry(self, entry_id: str) -> ConversationEntry:
        return self.store.read_entry_sync(entry_id)

    async def read_history(self, head_id: str | None, *, limit: int | None = None) -> list[ConversationEntry]:
        return history.read_history(self.store.alias, head_id, limit)


def _completed(operation: Coroutine[Any, Any, T]) -> T:
    """The result of a coroutine that never suspends (it awaits only :class:`_OnThisThread`'s
    primitives), run to its end right here, without an event loop."""
    try:
        operation.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    operation.close()
    raise RuntimeError("a conversation store operation waited on something other than the database")


def _aware(connection: BaseDatabaseWrapper, value: Any) -> Any:
    """A ``DateTimeField`` value read on Django's cursor, as the ORM would return it."""
    if isinstance(value, str):  # SQLite without the column's declared type
        value = parse_datetime(value)
    if value is not None and settings.USE_TZ and timezone.is_naive(value):
        value = timezone.make_aware(value, connection.timezone)
    return value


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


EntryRow = tuple[str, str | None, str, str, str, str | None, str]
"""``statements.ENTRY_COLUMNS`` but ``created_at``."""


def _entry_rows(
    conversation_id: str, new_entries: Sequence[ConversationEntry]
) -> tuple[list[EntryRow], set[str]]:
    """Rows for the new entries (``statements.ENTRY_COLUMNS`` but ``created_at``), and the stored
    entries they continue (which must exist).

    An entry's parent is an earlier new entry or a stored one; a parent named later in
    ``new_entries`` is looked up in the store, so entries can never form a cycle.
    """
    rows: list[EntryRow] = []
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
            (
                entry_id,
                entry.parent_id,
                conversation_id,
                entry.kind,
                *sealed_message(entry.message, conversation_id, entry_id, entry.parent_id),
            )
        )
    return rows, anchors
