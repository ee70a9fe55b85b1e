"""The port's three verbs for sync code, typed, with no event loop when the port allows.

The contract's port is async. A port may also offer sync twins (``read_metadata_sync``,
``write_metadata_sync``, ``claim_metadata_sync``, see :class:`SyncCheckpointCommands`);
the model port does, so sync Django code pays no ``async_to_sync`` bridge. A port with
only the contract's four members still works, through one bridge per call.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from asgiref.sync import async_to_sync

from turnstate_app.contracts import CheckpointCommandPort


@runtime_checkable
class SyncCheckpointCommands(Protocol):
    """The optional sync twins of :class:`~turnstate_app.contracts.CheckpointCommandPort`."""

    def read_metadata_sync(self, *, thread_id: str, checkpoint_id: str, key: str) -> str | None: ...

    def write_metadata_sync(
        self, *, thread_id: str, checkpoint_id: str, key: str, value: str, task_id: str | None
    ) -> None: ...

    def claim_metadata_sync(
        self, *, thread_id: str, checkpoint_id: str, key: str, value: str, task_id: str | None
    ) -> bool: ...


class BlockingCommands:
    """A port seen from sync code: its twins when it has all three, else ``async_to_sync``."""

    def __init__(self, commands: CheckpointCommandPort) -> None:
        self._commands = commands
        self._twins = commands if isinstance(commands, SyncCheckpointCommands) else None

    @property
    def has_sync_twins(self) -> bool:
        return self._twins is not None

    def read(self, *, thread_id: str, checkpoint_id: str, key: str) -> str | None:
        if self._twins is not None:
            return self._twins.read_metadata_sync(thread_id=thread_id, checkpoint_id=checkpoint_id, key=key)
        return async_to_sync(self._commands.read_metadata)(
            thread_id=thread_id, checkpoint_id=checkpoint_id, key=key
        )

    def write(self, *, thread_id: str, checkpoint_id: str, key: str, value: str, task_id: str | None) -> None:
        if self._twins is not None:
            self._twins.write_metadata_sync(
                thread_id=thread_id, checkpoint_id=checkpoint_id, key=key, value=value, task_id=task_id
            )
            return
        async_to_sync(self._commands.write_metadata)(
            thread_id=thread_id, checkpoint_id=checkpoint_id, key=key, value=value, task_id=task_id
        )

    def claim(self, *, thread_id: str, checkpoint_id: str, key: str, value: str, task_id: str | None) -> bool:
        if self._twins is not None:
            return self._twins.claim_metadata_sync(
                thread_id=thread_id, checkpoint_id=checkpoint_id, key=key, value=value, task_id=task_id
            )
        return async_to_sync(self._commands.claim_metadata)(
            thread_id=thread_id, checkpoint_id=checkpoint_id, key=key, value=value, task_id=task_id
        )
