"""The contrib's own errors: a stored row that cannot be read back, a graph without a name.

Bad ids are refused with the core's :class:`~turnstate_app.errors.CheckpointFieldError`.
"""

from __future__ import annotations

from turnstate_app.errors import TurnStateError, UnreadableValueError


class UnreadableCheckpointError(UnreadableValueError):
    """A stored checkpoint, channel value or write cannot be read back.

    A row whose MAC does not verify (edited, planted or moved by someone without
    ``SECRET_KEY``), a value whose encryption key is gone, corrupt bytes, a serialization
    type the serializer does not know, or a type the serializer refused to construct. Nothing
    from the row is returned, and no other row (another checkpoint, another thread) is tried
    in its place.
    """


class UnnamedGraphError(TurnStateError, ValueError):
    """A graph still named ``"LangGraph"`` (LangGraph's default) was asked to pause.

    A pause records its graph's name, so that only that graph continues it; every unnamed
    graph shares the default, which would tell no two apart.
    """
