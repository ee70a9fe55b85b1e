"""The contrib's own errors: a stored row that cannot be read back, a state written over meanwhile."""

from __future__ import annotations

from turnstate_app.errors import TurnStateError, UnreadableValueError


class UnreadableSessionItemError(UnreadableValueError):
    """A stored session item is not the JSON it was written as, or fails its MAC; it is kept, nothing
    is returned."""


class UnreadableRunStateError(UnreadableValueError):
    """A stored run state cannot be read back by this SDK (corrupt, failing its MAC, or a schema it
    does not know)."""


class StaleRunStateError(TurnStateError):
    """The run's stored state moved on since it was read: the compare-and-set wrote nothing."""


class UnnamedAgentError(TurnStateError, ValueError):
    """An agent without a name cannot be told apart from any other, so its pauses are refused."""
