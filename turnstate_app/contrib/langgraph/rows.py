"""Turning LangGraph's values into the saver's rows and back, through the serializer.

Every decode goes through :func:`loads`, which names the row it read when it fails:
a corrupt blob, an unknown serialization type, a refused constructor or a value whose
encryption key is gone becomes an :class:`UnreadableCheckpointError`, never a partial value.
Every serialized value (the checkpoint's body, with its inline channel values; each channel
value row; each pending write) is sealed with :mod:`turnstate_app.encryption` under its
thread's key, its key id in the row's own column, and carries its row's MAC
(:mod:`.integrity`), checked here before the value is decrypted or decoded.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import WRITES_IDX_MAP, Checkpoint, CheckpointTuple, writes_sort_key
from langgraph.checkpoint.serde.base import SerializerProtocol

from turnstate_app.contrib.langgraph import integrity
from turnstate_app.contrib.langgraph.errors import UnreadableCheckpointError
from turnstate_app.encryption import seal, unseal

EMPTY = "empty"  # a channel with a version but no value, as rows written before ELSEWHERE stored it
INLINE_MAX = 4096
"""Serialized bytes up to which a channel value is kept inside the checkpoint's own row; a larger
one gets a row of its own, stored once per version and shared by the checkpoints that keep it.
On PostgreSQL a checkpoint and its new value rows are one statement (a data-modifying ``WITH``)."""
INLINE_MAX_SQLITE = 65536
"""The same on SQLite, where a checkpoint with a value row takes a transaction of two writes (four
statements with BEGIN and COMMIT, each through Django's cursor): a step of a chat whose messages
come to a few dozen KB stays one statement. LangGraph's own ``SqliteSaver`` keeps every value
inside the checkpoint's row."""
ELSEWHERE = "~elsewhere"
"""The body's list of the channels whose values are rows of their own (the rest are inline or empty).

A body without it was written before it existed: there every channel that is not inline has a
row, an empty one included (``EMPTY``), and is looked up."""

# (thread, ns_hash, channel, version) -> (type, blob, key id, MAC); (thread, ns_hash, checkpoint_id) -> writes
BlobMap = dict[tuple[str, str, str, str], tuple[str, bytes | None, str | None, str | None]]
# path, task, idx, channel, type, blob, key id, MAC
Write = tuple[str, str, int, str, str, bytes, str | None, str | None]
WriteMap = dict[tuple[str, str, str], list[Write]]
CHECKPOINT_WIDTH = 8
"""Columns of a checkpoint row as read (``statements.CHECKPOINT_SELECT``)."""


def loads(
    serde: SerializerProtocol,
    type_: str,
    data: Any,
    what: str,
    *parts: Any,
    key_id: str | None = None,
    thread_id: str = "",
) -> Any:
    """One stored value, decrypted when ``key_id`` says it is sealed (with ``thread_id``'s keys);
    ``what.format(*parts)`` names it in the error (spelt only on failure)."""
    try:
        blob = data if type(data) is bytes else b"" if data is None else bytes(data)
        if key_id is not None:
            blob = unseal(blob, key_id, thread_id=thread_id)
        return serde.loads_typed((type_, blob))
    except Exception as exc:
        name = what.format(*parts)
        raise UnreadableCheckpointError(f"{name} cannot be read: {type(exc).__name__}: {exc}") from exc


def load_json(value: Any) -> dict[str, Any]:
    loaded = json.loads(value) if isinstance(value, (str, bytes, bytearray)) else value
    return dict(loaded or {})


def config_of(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def write_rows(
    serde: SerializerProtocol,
    place: tuple[str, str, str],
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
) -> list[Any]:
    """Flat parameters of one row per write; special channels take their fixed negative index."""
    thread_id, ns_key, checkpoint_id = place
    params: list[Any] = []
    for position, (channel, value) in enumerate(writes):
        type_, data = serde.dumps_typed(value)
        blob, key_id = seal(data, thread_id=thread_id)
        idx = WRITES_IDX_MAP.get(channel, position)
        identity = (thread_id, ns_key, checkpoint_id, task_id, idx, task_path, channel, type_)
        params += (*identity[:4], task_path, idx, channel, type_, blob, key_id)
        params.append(integrity.mac(integrity.WRITE, identity, key_id, blob))
    return params


def split_values(rows: Iterable[Sequence[Any]]) -> tuple[BlobMap, WriteMap]:
    """The rows of :func:`~turnstate_app.contrib.langgraph.statements.get_values`, by place."""
    blobs: BlobMap = {}
    writes: WriteMap = {}
    for (
        kind,
        thread_id,
        ns,
        channel,
        version_or_id,
        type_,
        blob,
        task_id,
        task_path,
        idx,
        key_id,
        mac,
    ) in rows:
        if kind == 0:
            blobs[(thread_id, ns, channel, version_or_id)] = (type_, blob, key_id, mac)
        else:
            writes.setdefault((thread_id, ns, version_or_id), []).append(
                (task_path or "", task_id, int(idx), channel, type_, blob, key_id, mac)
            )
    return blobs, writes


def build_tuple(
    serde: SerializerProtocol,
    thread_id: str,
    ns: str,
    ns_key: str,
    row: Sequence[Any],
    body: dict[str, Any],
    blobs: BlobMap,
    writes: WriteMap,
) -> CheckpointTuple:
    """A :class:`CheckpointTuple` from a checkpoint row, its decoded body and the values fetched for it.

    Each value row and pending write is checked against its MAC before it is decoded."""
    _ns, checkpoint_id, parent_id, _type, _blob, _key_id, metadata, _mac = row
    inline = body.get("channel_values") or {}
    values: dict[str, Any] = {}
    for channel, version in body["channel_versions"].items():
        found = inline.get(channel)  # [type, data]: decrypted with the body, covered by its MAC
        key_id = None
        if found is None:
            found = value_row(blobs, (thread_id, ns_key, channel, str(version)), checkpoint_id)
            key_id = None if found is None else found[2]
        if found is not None and found[0] != EMPTY:
            values[channel] = loads(
                serde,
                found[0],
                found[1],
                CHANNEL_WHAT,
                channel,
                thread_id,
                checkpoint_id,
                key_id=key_id,
                thread_id=thread_id,
            )
    body.pop(ELSEWHERE, None)
    body["channel_values"] = values  # the body is this call's own, freshly decoded
    pending = writes.get((thread_id, ns_key, checkpoint_id))
    if pending:
        pending.sort(key=_write_order)
        pending_writes = [  # (task id, channel, value)
            (write[1], write[3], load_write(serde, thread_id, ns_key, checkpoint_id, write))
            for write in pending
        ]
    else:
        pending_writes = []
    return CheckpointTuple(
        config=config_of(thread_id, ns, checkpoint_id),
        checkpoint=body,  # type: ignore[arg-type]
        metadata=load_json(metadata),  # type: ignore[arg-type]
        parent_config=config_of(thread_id, ns, parent_id) if parent_id else None,
        pending_writes=pending_writes,
    )


CHANNEL_WHAT = "channel {0!r} of thread {1!r}, checkpoint {2!r}"
WRITE_WHAT = "write {0!r}/{1} to {2!r} of thread {3!r}, checkpoint {4!r}"
BODY_WHAT = "checkpoint {0!r} of thread {1!r}"


def _write_order(write: Write) -> tuple[Any, ...]:
    return writes_sort_key(write[0], write[1], write[2])


def value_row(
    blobs: BlobMap, place: tuple[str, str, str, str], checkpoint_id: str
) -> tuple[str, bytes | None, str | None, str | None] | None:
    """The row of a channel value at ``place`` (thread, ns_hash, channel, version), once its MAC
    verifies; None when it has none."""
    found = blobs.get(place)
    if found is not None:
        type_, blob, key_id, mac = found
        thread_id, _ns_key, channel, _version = place
        parts = (channel, thread_id, checkpoint_id)
        integrity.require(integrity.BLOB, (*place, type_), key_id, blob, mac, CHANNEL_WHAT, *parts)
    return found


def load_write(
    serde: SerializerProtocol, thread_id: str, ns_key: str, checkpoint_id: str, write: Write
) -> Any:
    """One pending write's value, once its MAC verifies."""
    path, task_id, idx, channel, type_, blob, key_id, mac = write
    identity = (thread_id, ns_key, checkpoint_id, task_id, idx, path, channel, type_)
    parts = (task_id, idx, channel, thread_id, checkpoint_id)
    integrity.require(integrity.WRITE, identity, key_id, blob, mac, WRITE_WHAT, *parts)
    return loads(serde, type_, blob, WRITE_WHAT, *parts, key_id=key_id, thread_id=thread_id)


def checkpoint_identity(thread_id: str, ns_key: str, row: Sequence[Any]) -> tuple[Any, ...]:
    """The identity a checkpoint row's MAC covers, from the row as read (``CHECKPOINT_SELECT``)."""
    ns, checkpoint_id, parent_id, type_ = row[:4]
    return (thread_id, ns, ns_key, checkpoint_id, parent_id, type_)


def require_checkpoint(thread_id: str, ns_key: str, row: Sequence[Any]) -> None:
    """:class:`UnreadableCheckpointError` unless the checkpoint row's MAC verifies."""
    _ns, checkpoint_id, _parent, _type, blob, key_id, _metadata, mac = row
    identity = checkpoint_identity(thread_id, ns_key, row)
    integrity.require(integrity.CHECKPOINT, identity, key_id, blob, mac, BODY_WHAT, checkpoint_id, thread_id)


def decode_body(serde: SerializerProtocol, thread_id: str, ns_key: str, row: Sequence[Any]) -> dict[str, Any]:
    """The checkpoint without its channel values (``channel_values``: the inline ones, serialized),
    once its row's MAC verifies."""
    require_checkpoint(thread_id, ns_key, row)
    _ns, checkpoint_id, _parent, type_, blob, key_id, _metadata, _mac = row
    body = loads(serde, type_, blob, BODY_WHAT, checkpoint_id, thread_id, key_id=key_id, thread_id=thread_id)
    if not isinstance(body, dict) or not isinstance(body.get("channel_versions"), dict):
        raise UnreadableCheckpointError(
            f"checkpoint {checkpoint_id!r} of thread {thread_id!r} cannot be read: not a checkpoint"
        )
    return body


def stored_elsewhere(body: dict[str, Any]) -> list[tuple[str, str]]:
    """The (channel, version) pairs of this checkpoint whose values live in the value table."""
    versions = body["channel_versions"]
    elsewhere = body.get(ELSEWHERE)
    if elsewhere is not None:
        return [(channel, str(versions[channel])) for channel in elsewhere if channel in versions]
    inline = body.get("channel_values") or {}
    return [(channel, str(version)) for channel, version in versions.items() if channel not in inline]


def inline_max(vendor: str) -> int:
    """Serialized bytes up to which a channel value travels inside the checkpoint's row on ``vendor``."""
    return INLINE_MAX_SQLITE if vendor == "sqlite" else INLINE_MAX


def split_body(
    serde: SerializerProtocol, checkpoint: Checkpoint, new_versions: dict[str, Any], limit: int
) -> tuple[tuple[str, bytes], list[tuple[str, str, str | None, bytes | None]]]:
    """The serialized body (small values inline) and the value rows (channel, version, type, blob) to store.

    A value of at most ``limit`` serialized bytes (:func:`inline_max`) travels inside the body: one row for
    the whole checkpoint. A larger one gets a row of its own when its channel changed, and is
    shared from then on by every checkpoint that keeps that version; the body names those
    channels (``ELSEWHERE``), so a read looks up only them. Whether a value is inline depends
    on the value and the database alone, so an unchanged channel is found where it was first
    put. A channel with a version but no value (a trigger consumed, say) is neither, and costs no row: a step
    that changed only small values is one row.
    """
    versions = checkpoint["channel_versions"]
    values = checkpoint["channel_values"]
    inline: dict[str, list[Any]] = {}
    elsewhere: list[str] = []
    rows: list[tuple[str, str, str | None, bytes | None]] = []
    for channel, value in values.items():
        if channel not in versions:
            continue
        type_, data = serde.dumps_typed(value)
        if len(data) <= limit:
            inline[channel] = [type_, data]
            continue
        elsewhere.append(channel)
        if channel in new_versions:
            rows.append((channel, str(new_versions[channel]), type_, data))
    body = {key: value for key, value in checkpoint.items() if key != "channel_values"}
    body["channel_values"] = inline
    body[ELSEWHERE] = elsewhere
    return serde.dumps_typed(body), rows
