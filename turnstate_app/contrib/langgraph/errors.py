"""The saver's own error: a stored row that cannot be read back.

Bad ids are refused with the core's :class:`~turnstate_app.errors.CheckpointFieldError`.
"""

from __future__ import annotations

from turnstate_app.errors import PayloadBindingError


class UnreadableCheckpointError(PayloadBindingError):
    """A stored checkpoint, channel value or write cannot be read back.

    Corrupt bytes, a serialization type the serializer does not know, or a type the
    serializer refused to construct. Nothing from the row is returned, and no other
    row (another checkpoint, another thread) is tried in its place.
    """
