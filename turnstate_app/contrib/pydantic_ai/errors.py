"""The contrib's own errors: a row that cannot be read back, a run not saved, an agent without a name."""

from __future__ import annotations

from turnstate_app.errors import PayloadBindingError, TurnStateError


class UnreadableConversationError(PayloadBindingError):
    """A stored record or entry cannot be read back (corrupt JSON, an unknown format or kind).

    Nothing from the row is returned, and no other row is tried in its place.
    """


class ConversationNotSavedError(TurnStateError, ValueError):
    """``pause_deferred`` was given a run whose conversation is not saved in the store at its revision.

    A pause continues a stored revision; without one there is nothing to continue from. The
    message says which: never saved (often a ``store.save(result)`` in sync code that nobody
    awaited: use ``store.save_sync(result)``), not saved after this run, or saved again since.
    """


class UnnamedAgentError(TurnStateError, ValueError):
    """``pause_deferred`` was given an agent without a name.

    With ``agent=`` a pause records the agent's name, so that only that agent continues it;
    an agent without one could not be told apart from any other.
    """
