"""A volatile port for tests and examples: same semantics as the model port, no durability."""

from __future__ import annotations

import threading

from turnstate_app.conf import conf
from turnstate_app.ports.limits import require_row_ids, require_write


class InMemoryCheckpointCommandPort:
    """Rows in a dict behind a lock. ``durable`` is False: a restart loses everything."""

    durable = False

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str, str], tuple[str, str | None]] = {}
        self._lock = threading.Lock()

    def read_metadata_sync(self, *, thread_id: str, checkpoint_id: str, key: str) -> str | None:
        require_row_ids(thread_id, checkpoint_id, key, vendor=None)
        with self._lock:
            row = self._rows.get((thread_id, checkpoint_id, key))
        return None if row is None else row[0]

    def write_metadata_sync(
        self, *, thread_id: str, checkpoint_id: str, key: str, value: str, task_id: str | None
    ) -> None:
        require_write(
            thread_id,
            checkpoint_id,
            key,
            value,
            task_id,
            vendor=None,
            max_bytes=conf.MAX_VALUE_BYTES,
        )
        with self._lock:
            self._rows[(thread_id, checkpoint_id, key)] = (value, task_id)

    def claim_metadata_sync(
        self, *, thread_id: str, checkpoint_id: str, key: str, value: str, task_id: str | None
    ) -> bool:
        require_write(
            thread_id,
            checkpoint_id,
            key,
            value,
            task_id,
            vendor=None,
            max_bytes=conf.MAX_VALUE_BYTES,
        )
        row = (thread_id, checkpoint_id, key)
        with self._lock:
            if row in self._rows:
                return False
            self._rows[row] = (value, task_id)
            return True

    def release_metadata_sync(self, *, thread_id: str, checkpoint_id: str, key: str, value: str) -> bool:
        """Delete the row at this place only while it still holds ``value`` (see the model port)."""
        row = (thread_id, checkpoint_id, key)
        with self._lock:
            if row in self._rows and self._rows[row][0] == value:
                del self._rows[row]
                return True
            return False

    async def read_metadata(self, *, thread_id: str, checkpoint_id: str, key: str) -> str | None:
        return self.read_metadata_sync(thread_id=thread_id, checkpoint_id=checkpoint_id, key=key)

    async def write_metadata(
        self, *, thread_id: str, checkpoint_id: str, key: str, value: str, task_id: str | None
    ) -> None:
        self.write_metadata_sync(
            thread_id=thread_id, checkpoint_id=checkpoint_id, key=key, value=value, task_id=task_id
        )

    async def claim_metadata(
        self, *, thread_id: str, checkpoint_id: str, key: str, value: str, task_id: str | None
    ) -> bool:
        return self.claim_metadata_sync(
            thread_id=thread_id, checkpoint_id=checkpoint_id, key=key, value=value, task_id=task_id
        )
