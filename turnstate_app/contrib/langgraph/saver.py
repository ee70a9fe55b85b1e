"""``DjangoCheckpointSaver``: LangGraph's ``BaseCheckpointSaver`` on Django's own connection.

It runs in the database the router picks for its models (or ``using``), through
Django's connection for the calling thread (for LangGraph's executor threads, the saver
connection: :mod:`.connections`): no second pool, Django's transactions,
query logging and error translation apply. ``get_tuple`` is one query (plus one
for values too large to travel inside the checkpoint's row), ``put`` and ``put_writes``
one statement each (``put`` two in a transaction on SQLite and MariaDB when large values
change), ``list`` one query plus one per hundred checkpoints with large values. Every
serialized value is encrypted at rest when keys are configured (:mod:`turnstate_app.encryption`),
its key id and its row's MAC (:mod:`.integrity`) travelling in the same statement; every read
checks the MAC before it decrypts or decodes.
"""

from __future__ import annotations

import builtins
import random
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import connections, router, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import F
from django.db.models.fields.json import KeyTransform
from django.utils import timezone
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from turnstate_app.contrib._text import refuse_lone_surrogate, refuse_lone_surrogates_in
from turnstate_app.contrib.langgraph import integrity, maintenance, statements
from turnstate_app.contrib.langgraph.connections import borrowed, run_sync
from turnstate_app.contrib.langgraph.execution import fetch, run_writes
from turnstate_app.contrib.langgraph.keys import (
    NAME_MAX_LENGTH,
    SHORT_ID_MAX_LENGTH,
    check_text,
    checkpoint_id_of,
    namespace_of,
    ns_hash,
    thread_id_of,
    version_of,
)
from turnstate_app.contrib.langgraph.ledger import strand_pauses
from turnstate_app.contrib.langgraph.rows import (
    CHECKPOINT_WIDTH,
    build_tuple,
    decode_body,
    inline_max,
    split_body,
    split_values,
    stored_elsewhere,
    write_rows,
)
from turnstate_app.contrib.langgraph.serde import default_serde
from turnstate_app.encryption import seal

PAGE = 100  # checkpoints whose values one query of ``list`` fetches
VERSION_STEP_DIGITS = 10  # a channel's versions sort as text up to 10**10 steps


P = ParamSpec("P")
T = TypeVar("T")


def _call(method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return method(*args, **kwargs)


# The async twins' one hop onto Django's thread-sensitive executor, built once rather than per call.
_in_executor = sync_to_async(_call, thread_sensitive=True)


async def _hop(method: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    result: T = await _in_executor(method, *args, **kwargs)
    return result


@dataclass(frozen=True, slots=True)
class _PreparedPut:
    """A ``put`` checked, serialized and sealed, waiting for a connection."""

    alias: str
    config: RunnableConfig
    params: list[Any]  # the checkpoint row's, up to its metadata and creation time
    metadata: CheckpointMetadata
    blob_rows: int
    blob_params: list[Any]


_checkpoint_model: Any = None

_MISSED: Any = object()


class _HeadRead:
    """A thread's head as :func:`one_head_read` keeps it: the rows the first read fetched, from
    which the next read of that head builds its own tuple (LangGraph changes the one it is
    given), then let go; any write of the saver lets them go too."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self.place: tuple[str, str] | None = None
        self.found: Any = _MISSED
        self.spent = False

    def take(self, thread_id: str, place: tuple[str, str]) -> Any:
        """The kept rows of this head (None: it has no checkpoint; ``_MISSED``: none kept, read it)."""
        if self.spent or thread_id != self.thread_id or self.found is _MISSED or self.place != place:
            return _MISSED
        found, self.found, self.spent = self.found, _MISSED, True
        return found

    def keep(self, thread_id: str, place: tuple[str, str], found: Any) -> None:
        if not self.spent and thread_id == self.thread_id and self.found is _MISSED:
            self.place, self.found = place, found

    def forget(self) -> None:
        self.found, self.spent = _MISSED, True


_head_read: ContextVar[_HeadRead | None] = ContextVar("turnstate_langgraph_head_read", default=None)


@contextmanager
def one_head_read(thread_id: str) -> Iterator[None]:
    """Within the block, the head of ``thread_id`` is read from the database once: the next read of
    it (the run that starts from the head a continuation just checked) gets the same tuple, which
    is then let go, as it is by any write of the saver meanwhile. For a continuation holding the
    thread's turn, so nothing else moves the head between its check and its run."""
    token = _head_read.set(_HeadRead(thread_id))
    try:
        yield
    finally:
        _head_read.reset(token)


WriteId = tuple[str, int, str]
"""A pending write as a pause binds it: its task id, index and channel (its value has its own MAC)."""

_writes_read: ContextVar[dict[tuple[str, str, str], builtins.list[WriteId]] | None] = ContextVar(
    "turnstate_langgraph_writes_read", default=None
)


@contextmanager
def writes_read() -> Iterator[dict[tuple[str, str, str], builtins.list[WriteId]]]:
    """Within the block, the pending writes of every checkpoint ``get_tuple`` returns, by
    ``(thread_id, checkpoint_ns, checkpoint_id)``: each as :data:`WriteId`, once its MAC verified.

    LangGraph's tuple carries a write's task and channel but not its index, and its state snapshot
    neither; a pause binds all three, so it takes them from the read the graph does anyway.
    """
    seen: dict[tuple[str, str, str], builtins.list[WriteId]] = {}
    token = _writes_read.set(seen)
    try:
        yield seen
    finally:
        _writes_read.reset(token)


def _forget_head() -> None:
    kept = _head_read.get()
    if kept is not None:
        kept.forget()


def _model() -> Any:
    global _checkpoint_model
    if _checkpoint_model is None:
        from turnstate_app.contrib.langgraph.models import Checkpoint as CheckpointRow

        _checkpoint_model = CheckpointRow
    return _checkpoint_model


def _created_at(connection: BaseDatabaseWrapper) -> Any:
    """``now`` as the connection stores a ``DateTimeField``: Django's own adaptation, whose result
    on SQLite in UTC (naive UTC, ``str``) is spelt directly, as every ``put`` stores one.

    ``connection.timezone`` is UTC only while ``USE_TZ`` is on (Django resets it when the
    setting changes); the aware ISO form without its ``+00:00`` is ``str`` of the naive value.
    """
    if connection.vendor == "sqlite" and connection.timezone is UTC:
        return datetime.now(UTC).isoformat(" ")[:-6]
    return connection.ops.adapt_datetimefield_value(timezone.now())


def _deleting(
    alias: str, delete: Callable[[str, Sequence[str]], object], threads: Sequence[str], operation: str
) -> None:
    """Delete every checkpoint of ``threads`` and strand their pending pauses, in one transaction."""
    with transaction.atomic(using=alias):
        delete(alias, threads)
        strand_pauses(threads, operation)


def _deleting_runs(alias: str, run_ids: Sequence[str], serde: SerializerProtocol, operation: str) -> None:
    """Delete the checkpoints of ``run_ids`` and strand the pending pauses made at them, together."""
    with transaction.atomic(using=alias):
        gone = maintenance.delete_for_runs(alias, run_ids, serde)
        strand_pauses([(thread, checkpoint) for thread, _, checkpoint in gone], operation)


class DjangoCheckpointSaver(BaseCheckpointSaver[str]):
    """A LangGraph checkpoint saver storing in this Django project's database.

    ``using`` pins a database alias; by default the router decides (``db_for_read``
    for reads, ``db_for_write`` for writes). ``serde`` defaults to the strict
    serializer of :mod:`turnstate_app.contrib.langgraph.serde`; one given is used as is.
    """

    def __init__(self, *, using: str | None = None, serde: SerializerProtocol | None = None) -> None:
        super().__init__(serde=serde if serde is not None else default_serde())
        self.using = using

    # -- where ----------------------------------------------------------------------------

    def _read_alias(self) -> str:
        return self.using or router.db_for_read(_model())

    def _write_alias(self) -> str:
        return self.using or router.db_for_write(_model())

    # -- reads ----------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return run_sync(self._read_alias(), self._get_tuple, config, keep=False)

    def _get_tuple(self, config: RunnableConfig, *, keep: bool) -> CheckpointTuple | None:
        conf = config["configurable"]
        thread_id = thread_id_of(conf["thread_id"])
        ns = namespace_of(conf.get("checkpoint_ns", ""))
        ns_key = ns_hash(ns)
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id:
            refuse_lone_surrogate("checkpoint_id", checkpoint_id)
        alias = self.using or router.db_for_read(_checkpoint_model or _model())
        kept = None if checkpoint_id else _head_read.get()
        taken = _MISSED if kept is None else kept.take(thread_id, (alias, ns_key))
        if taken is None:
            return None
        if taken is _MISSED:
            fetched = self._fetch(alias, thread_id, ns_key, checkpoint_id, keep=keep)
            if kept is not None:  # the rows as fetched: the next read builds its own tuple from them
                kept.keep(thread_id, (alias, ns_key), None if fetched is None else (fetched[0], fetched[2]))
            if fetched is None:
                return None
            found, body, blobs = fetched
        else:
            found, blobs = taken
            body = decode_body(self.serde, thread_id, ns_key, found[0][:CHECKPOINT_WIDTH])
        row = found[0][:CHECKPOINT_WIDTH]
        # the checkpoint's 8 columns, then a write's: task_id, path, idx, channel, type, blob, key id, MAC
        writes = [
            (r[9] or "", r[8], int(r[10]), r[11], r[12], r[13], r[14], r[15])
            for r in found
            if r[8] is not None
        ]
        built = build_tuple(
            self.serde, thread_id, ns, ns_key, row, body, blobs, {(thread_id, ns_key, row[1]): writes}
        )
        seen = _writes_read.get()
        if seen is not None:  # after build_tuple: every write's MAC verified
            seen[(thread_id, ns, str(row[1]))] = sorted((w[1], w[2], w[3]) for w in writes)
        return built

    def _fetch(
        self, alias: str, thread_id: str, ns_key: str, checkpoint_id: str | None, *, keep: bool
    ) -> tuple[list[Any], dict[str, Any], Any] | None:
        """A checkpoint's rows (with its pending writes), its decoded body and the values it keeps
        elsewhere; None when there is none."""
        if checkpoint_id:
            sql = statements.get_checkpoint(alias, True)
            params: tuple[Any, ...] = (thread_id, ns_key, checkpoint_id, thread_id, ns_key)
        else:
            sql = statements.get_checkpoint(alias, False)
            params = (thread_id, ns_key, thread_id, ns_key)
        with borrowed(alias, keep=keep) as connection:
            found = fetch(connection, sql, params)
            if not found:
                return None
            body = decode_body(self.serde, thread_id, ns_key, found[0][:CHECKPOINT_WIDTH])
            blobs = self._blobs(connection, [(thread_id, ns_key, body)]) if stored_elsewhere(body) else {}
        return found, body, blobs

    def _blobs(
        self, connection: BaseDatabaseWrapper, found: Sequence[tuple[str, str, dict[str, Any]]]
    ) -> Any:
        """The values these checkpoints keep outside their own row (none: no query)."""
        blobs, _ = self._values(connection, [(t, n, None, body) for t, n, body in found], with_writes=False)
        return blobs

    def _values(
        self,
        connection: BaseDatabaseWrapper,
        found: Sequence[tuple[str, str, Sequence[Any] | None, dict[str, Any]]],
        *,
        with_writes: bool = True,
    ) -> tuple[Any, Any]:
        """One query: the out-of-row channel values and (``with_writes``) the pending writes."""
        versions: dict[tuple[str, str], set[tuple[str, str]]] = {}
        checkpoints: dict[tuple[str, str], list[str]] = {}
        for thread_id, ns_key, row, body in found:
            space = (thread_id, ns_key)
            pairs = stored_elsewhere(body)
            if pairs:
                versions.setdefault(space, set()).update(pairs)
            if with_writes and row is not None:
                checkpoints.setdefault(space, []).append(row[1])
        if not versions and not checkpoints:
            return {}, {}
        blob_groups, write_groups, params = [], [], []
        for space, wanted in versions.items():
            blob_groups.append(len(wanted))
            params += [*space, *(part for pair in sorted(wanted) for part in pair)]
        for space, ids in checkpoints.items():
            write_groups.append(len(ids))
            params += [*space, *ids]
        sql = statements.get_values(connection.alias, tuple(blob_groups), tuple(write_groups))
        return split_values(fetch(connection, sql, params))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        found = run_sync(
            self._read_alias(), self._list, config, filter=filter, before=before, limit=limit, keep=False
        )
        return iter(found)

    def _list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
        keep: bool,
    ) -> builtins.list[CheckpointTuple]:
        alias = self._read_alias()
        conf = config["configurable"] if config is not None else {}
        thread_id = thread_id_of(conf["thread_id"]) if conf.get("thread_id") is not None else None
        ns_key = ns_hash(namespace_of(conf["checkpoint_ns"])) if "checkpoint_ns" in conf else None
        checkpoint_id = get_checkpoint_id(config) if config is not None else None
        before_id = get_checkpoint_id(before) if before is not None else None
        for field, looked_up in (("checkpoint_id", checkpoint_id), ("before", before_id), ("filter", filter)):
            refuse_lone_surrogates_in(field, looked_up)
        results: builtins.list[CheckpointTuple] = []
        with borrowed(alias, keep=keep) as connection:
            writes: dict[tuple[str, str, str], builtins.list[Any]] = {}
            if filter:
                fetched = self._filtered(alias, thread_id, ns_key, checkpoint_id, before_id, filter, limit)
                for start in range(0, len(fetched), PAGE):
                    no_values: dict[str, Any] = {"channel_versions": {}}
                    part = [(t, n, row, no_values) for t, n, *row in fetched[start : start + PAGE]]
                    writes.update(self._values(connection, part)[1])
            else:
                sql = statements.list_checkpoints(
                    alias,
                    thread_id is not None,
                    ns_key is not None,
                    bool(checkpoint_id),
                    bool(before_id),
                    limit is not None,
                )
                given = (thread_id, ns_key, checkpoint_id or None, before_id or None)
                params = [p for p in given if p is not None] + ([max(limit, 0)] if limit is not None else [])
                fetched = []
                # thread, ns_hash, the checkpoint's 8 columns, then a write's 8 (NULL: none)
                for r in fetch(connection, sql, params):
                    place = (r[0], r[1], r[3])
                    found = writes.get(place)
                    if found is None:
                        found = writes[place] = []
                        fetched.append(r[:10])
                    if r[10] is not None:
                        found.append((r[11] or "", r[10], int(r[12]), r[13], r[14], r[15], r[16], r[17]))
            for start in range(0, len(fetched), PAGE):
                page = [
                    (r[0], r[1], r[2:10], decode_body(self.serde, r[0], r[1], r[2:10]))
                    for r in fetched[start : start + PAGE]
                ]
                elsewhere = [
                    (thread, space, body) for thread, space, _, body in page if stored_elsewhere(body)
                ]
                blobs = self._blobs(connection, elsewhere) if elsewhere else {}
                results += [
                    build_tuple(self.serde, thread, row[0], space, row, body, blobs, writes)
                    for thread, space, row, body in page
                ]
        return results

    def _filtered(
        self,
        alias: str,
        thread_id: str | None,
        ns_key: str | None,
        checkpoint_id: str | None,
        before_id: str | None,
        filter: dict[str, Any],
        limit: int | None,
    ) -> builtins.list[Any]:
        """The rows of a ``list`` with a metadata filter, through the ORM (JSON lookups per vendor)."""
        rows = _model().objects.using(alias).all()
        if thread_id is not None:
            rows = rows.filter(thread_id=thread_id)
        if ns_key is not None:
            rows = rows.filter(ns_hash=ns_key)
        if checkpoint_id:
            rows = rows.filter(checkpoint_id=checkpoint_id)
        if before_id:
            rows = rows.filter(checkpoint_id__lt=before_id)
        for number, (key, value) in enumerate(filter.items()):
            rows = rows.alias(**{f"_meta{number}": KeyTransform(key, "metadata")}).filter(
                **{f"_meta{number}": value}
            )
        rows = rows.order_by(F("checkpoint_id").desc())
        if limit is not None:
            rows = rows[: max(limit, 0)]
        return builtins.list(rows.values_list("thread_id", "ns_hash", *statements.CHECKPOINT_SELECT))

    # -- writes ---------------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        # Serialized on the calling thread: the saver connection is held only for the statement.
        prepared = self._prepare_put(config, checkpoint, metadata, new_versions)
        run_sync(prepared.alias, self._store_put, prepared, keep=False)
        return prepared.config

    def _put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        *,
        keep: bool,
    ) -> RunnableConfig:
        prepared = self._prepare_put(config, checkpoint, metadata, new_versions)
        self._store_put(prepared, keep=keep)
        return prepared.config

    def _prepare_put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> _PreparedPut:
        """Everything of a ``put`` that needs no connection: checked, serialized and sealed."""
        conf = config["configurable"]
        thread_id = thread_id_of(conf["thread_id"])
        ns = namespace_of(conf.get("checkpoint_ns", ""))
        ns_key = ns_hash(ns)
        checkpoint_id = checkpoint_id_of(checkpoint["id"])
        parent_id = conf.get("checkpoint_id")
        if parent_id is not None:
            checkpoint_id_of(parent_id)
        for channel, version in new_versions.items():
            version_of(channel, version)
        alias = self._write_alias()
        limit = inline_max(connections[alias].vendor)
        (body_type, body_data), value_rows = split_body(self.serde, checkpoint, new_versions, limit)
        body_blob, body_key_id = seal(body_data, thread_id=thread_id)
        body_identity = (thread_id, ns, ns_key, checkpoint_id, parent_id, body_type)
        body_mac = integrity.mac(integrity.CHECKPOINT, body_identity, body_key_id, body_blob)
        blob_params: builtins.list[Any] = []
        for channel, version, type_, data in value_rows:
            blob, key_id = (None, None) if data is None else seal(data, thread_id=thread_id)
            value_mac = integrity.mac(
                integrity.BLOB, (thread_id, ns_key, channel, version, type_), key_id, blob
            )
            blob_params += [thread_id, ns_key, channel, version, type_, blob, key_id, value_mac]
        stored_metadata = get_serializable_checkpoint_metadata(config, metadata)
        run_id = stored_metadata.get("run_id")
        if run_id is not None:
            run_id = check_text("metadata run_id", str(run_id), max_length=NAME_MAX_LENGTH)
        refuse_lone_surrogates_in("metadata", stored_metadata)
        return _PreparedPut(
            alias=alias,
            config={
                "configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}
            },
            params=[
                thread_id,
                ns,
                ns_key,
                checkpoint_id,
                parent_id,
                run_id,
                body_type,
                body_blob,
                body_key_id,
                body_mac,
            ],
            metadata=stored_metadata,
            blob_rows=len(value_rows),
            blob_params=blob_params,
        )

    def _store_put(self, prepared: _PreparedPut, *, keep: bool) -> None:
        _forget_head()
        alias = prepared.alias
        with borrowed(alias, keep=keep) as connection:
            checkpoint_params = [
                *prepared.params,
                connection.ops.adapt_json_value(prepared.metadata, None),
                _created_at(connection),
            ]
            if not prepared.blob_rows:
                batch = [(statements.put_checkpoint(alias), checkpoint_params)]
            elif combined := statements.put_checkpoint_and_blobs(alias, prepared.blob_rows):
                batch = [(combined, prepared.blob_params + checkpoint_params)]
            else:
                batch = [
                    (statements.put_blobs(alias, prepared.blob_rows), prepared.blob_params),
                    (statements.put_checkpoint(alias), checkpoint_params),
                ]
            run_writes(connection, batch)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        # Serialized on the calling thread, as ``put``.
        prepared = self._prepare_writes(config, writes, task_id, task_path)
        if prepared is not None:
            run_sync(prepared[0], self._store_writes, *prepared, keep=False)

    def _put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
        *,
        keep: bool,
    ) -> None:
        prepared = self._prepare_writes(config, writes, task_id, task_path)
        if prepared is not None:
            self._store_writes(*prepared, keep=keep)

    def _prepare_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> tuple[str, str, builtins.list[Any]] | None:
        """The alias, statement and parameters of a ``put_writes`` (None: nothing to write)."""
        if not writes:
            return None
        conf = config["configurable"]
        ns = namespace_of(conf.get("checkpoint_ns", ""))
        place = (thread_id_of(conf["thread_id"]), ns_hash(ns), checkpoint_id_of(conf["checkpoint_id"]))
        check_text("task_id", task_id, max_length=SHORT_ID_MAX_LENGTH)
        for channel, _ in writes:
            check_text("channel", channel, max_length=NAME_MAX_LENGTH)
        path = check_text("task_path", task_path, max_length=None, allow_empty=True)
        params = write_rows(self.serde, place, writes, task_id, path)
        # As the base class defines it: special channels (errors, interrupts, resumes) overwrite.
        overwrite = all(channel in WRITES_IDX_MAP for channel, _ in writes)
        alias = self._write_alias()
        return alias, statements.put_writes(alias, len(writes), overwrite), params

    def _store_writes(self, alias: str, sql: str, params: builtins.list[Any], *, keep: bool) -> None:
        _forget_head()
        with borrowed(alias, keep=keep) as connection:
            run_writes(connection, [(sql, params)])

    # -- threads --------------------------------------------------------------------------

    def delete_thread(self, thread_id: str) -> None:
        threads = [thread_id_of(thread_id)]
        run_sync(self._write_alias(), self._delete_threads, threads, "delete_thread", keep=False)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        run_sync(self._write_alias(), self._delete_for_runs, _run_ids(run_ids), "delete_for_runs", keep=False)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        source, target = thread_id_of(source_thread_id), thread_id_of(target_thread_id)
        run_sync(self._write_alias(), self._maintain, maintenance.copy_thread, source, target, keep=False)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        threads = [thread_id_of(t) for t in thread_ids]
        run_sync(self._write_alias(), self._prune, threads, strategy, "prune", keep=False)

    def _maintain(self, operation: Callable[..., T], *args: Any, keep: bool) -> T:
        _forget_head()
        alias = self._write_alias()
        with borrowed(alias, keep=keep):
            return operation(alias, *args)

    # Deleting checkpoints a pending pause would continue from records why on the pause's ledger
    # row, in the deletion's transaction, so the core's unresumable list shows the pause.

    def _delete_threads(self, thread_ids: builtins.list[str], operation: str, *, keep: bool) -> None:
        self._maintain(_deleting, maintenance.delete_threads, thread_ids, operation, keep=keep)

    def _delete_for_runs(self, run_ids: builtins.list[str], operation: str, *, keep: bool) -> None:
        self._maintain(_deleting_runs, run_ids, self.serde, operation, keep=keep)

    def _prune(self, thread_ids: builtins.list[str], strategy: str, operation: str, *, keep: bool) -> None:
        if strategy == "delete":
            self._delete_threads(thread_ids, f"{operation}(strategy='delete')", keep=keep)
        else:
            self._maintain(maintenance.prune, thread_ids, strategy, self.serde, keep=keep)

    def get_next_version(self, current: str | None, channel: None) -> str:
        """``<step, 10 digits>.<random, 12 hex digits>``: 23 characters.

        LangGraph compares a channel's versions as text, hence the padded step; the random part
        keeps two forks of one step apart (their large values share the value table). Every
        checkpoint body names its channels' versions, several times over, so their length is
        paid in every checkpoint: LangGraph's own database savers spend 51 characters on each.
        A version of theirs, or one stored here before in their form, sorts before the next
        one made here.
        """
        if current is None:
            step = 0
        elif isinstance(current, int):
            step = current
        else:
            step = int(str(current).split(".")[0])
        return f"{step + 1:0{VERSION_STEP_DIGITS}}.{random.getrandbits(48):012x}"

    # -- async twins: one hop each onto Django's thread-sensitive executor ------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await _hop(self._get_tuple, config, keep=True)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = await _hop(self._list, config, filter=filter, before=before, limit=limit, keep=True)
        for item in found:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await _hop(self._put, config, checkpoint, metadata, new_versions, keep=True)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await _hop(self._put_writes, config, writes, task_id, task_path, keep=True)

    async def adelete_thread(self, thread_id: str) -> None:
        await _hop(self._delete_threads, [thread_id_of(thread_id)], "adelete_thread", keep=True)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await _hop(self._delete_for_runs, _run_ids(run_ids), "adelete_for_runs", keep=True)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        source, target = thread_id_of(source_thread_id), thread_id_of(target_thread_id)
        await self._amaintain(maintenance.copy_thread, source, target)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await _hop(self._prune, [thread_id_of(t) for t in thread_ids], strategy, "aprune", keep=True)

    async def _amaintain(self, operation: Callable[..., object], *args: Any) -> None:
        await _hop(self._maintain, operation, *args, keep=True)


def _run_ids(run_ids: Sequence[Any]) -> builtins.list[str]:
    """Run ids as stored in the metadata (their ``str``), none holding a lone surrogate."""
    ids = [str(run_id) for run_id in run_ids]
    refuse_lone_surrogates_in("run_ids", ids)
    return ids
