"""The MAC each saver row keeps (:mod:`turnstate_app.integrity`): which columns it covers.

A checkpoint's MAC covers its thread, namespace, id and parent id (so its lineage cannot be
rewired), its serialization type and its body as stored (the small channel values travel
inside it); a channel value's, its thread, namespace, channel, version and type; a pending
write's, its checkpoint, task, index, path, channel and type. Each is written in the statement
that writes the value and checked on every read before anything is decrypted or decoded: a row
someone without ``SECRET_KEY`` edited, planted or moved is an unreadable record.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from turnstate_app import integrity
from turnstate_app.contrib.langgraph.errors import UnreadableCheckpointError

__all__ = [
    "BLOB",
    "CHECKPOINT",
    "WRITE",
    "Table",
    "mac",
    "require",
    "verifies",
]


class Table:
    """One saver table as its MACs name it: the model's label and the columns of a row's identity."""

    def __init__(self, label: str, identity: tuple[str, ...]) -> None:
        self.label = label
        self.identity = identity


CHECKPOINT = Table(
    "turnstate_langgraph.Checkpoint",
    ("thread_id", "checkpoint_ns", "ns_hash", "checkpoint_id", "parent_checkpoint_id", "type"),
)
BLOB = Table("turnstate_langgraph.ChannelBlob", ("thread_id", "ns_hash", "channel", "version", "type"))
WRITE = Table(
    "turnstate_langgraph.CheckpointWrite",
    ("thread_id", "ns_hash", "checkpoint_id", "task_id", "idx", "task_path", "channel", "type"),
)


def mac(table: Table, identity: Sequence[Any], key_id: str | None, value: Any) -> str:
    """The MAC a row of ``table`` stores beside ``value`` (the column as stored: sealed or clear)."""
    return integrity.row_mac(table.label, identity, key_id, value)


def verifies(
    table: Table, identity: Sequence[Any], key_id: str | None, value: Any, recorded: str | None
) -> bool:
    """Whether ``recorded`` is the MAC of this row of ``table``."""
    return integrity.row_verifies(table.label, identity, key_id, value, recorded)


def require(
    table: Table,
    identity: Sequence[Any],
    key_id: str | None,
    value: Any,
    recorded: str | None,
    what: str,
    *parts: Any,
) -> None:
    """:class:`UnreadableCheckpointError` naming the row (``what.format(*parts)``, spelt only on
    failure) unless ``recorded`` is its MAC. Checked on every row a read returns: the MAC is
    verified directly, and the error built only for a row that fails."""
    if integrity.row_verifies(table.label, identity, key_id, value, recorded):
        return
    cause = integrity.changed_at_rest(table.label, identity, recorded)
    raise UnreadableCheckpointError(f"{what.format(*parts)} cannot be read: {cause}") from cause
