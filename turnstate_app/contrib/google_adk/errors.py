"""The contrib's own errors: an agent or app without a name, an invocation that asks nothing."""

from __future__ import annotations

from turnstate_app.errors import TurnStateError


class UnnamedAgentError(TurnStateError, ValueError):
    """``pause_confirmations`` was given an ADK ``App`` or agent without a name.

    Each pause records the name, so that only a runner of that app continues it; without one it
    could not be told apart from any other.
    """


class NothingToConfirmError(TurnStateError, ValueError):
    """The invocation's events hold no confirmation that waits for an answer: nothing to pause."""
