"""The errors a pause can end in, and why each is its own class.

Absence is not tampering: "nothing is stored" (:class:`PauseCheckpointNotFoundError`)
and "the request is stored but the turn state is not" (:class:`CheckpointLostError`)
are different facts from "something is stored and it is wrong"
(:class:`PayloadBindingError`). Only the last may ever speak of tampering.
"""

from __future__ import annotations


class TurnStateError(Exception):
    """Base of every error this app raises on purpose."""


class InteractionConfigurationError(TurnStateError):
    """The deployment is wired wrongly: no port, or a volatile one where durability is required."""


class PauseCheckpointNotFoundError(TurnStateError):
    """The store holds nothing for this pause: no request row, no turn state."""


class CheckpointLostError(TurnStateError):
    """The pause's request row is there; its turn state is not.

    The question can still be answered; the run cannot be continued from this store.
    """


class PayloadBindingError(TurnStateError):
    """Something is stored and it is wrong: unreadable, another turn's, or an unsigned token."""


class TokenSignatureError(PayloadBindingError):
    """The token itself is unusable: malformed, oversized, or failing its signature.

    Its own class so an HTTP face can tell "this token is bad" from "the stored record
    is another turn's" without reading messages; callers still catch PayloadBindingError.
    """


class UnreadableValueError(PayloadBindingError):
    """A value stored encrypted whose key is not configured (any more), or which fails authentication.

    An unreadable record, never a crash: the message names the thread and the key id, never
    the value. Dropping a tenant's keys makes each of its rows one of these (crypto-shredding).
    """


class ChangedAtRestError(UnreadableValueError):
    """A stored row whose MAC is missing or does not verify: written by someone without
    ``SECRET_KEY``, copied from another row, or edited since this app wrote it.

    Its own class so a caller can say "changed since it was written" rather than "cannot be
    read"; callers still catch :class:`UnreadableValueError` / :class:`PayloadBindingError`.
    """


class PauseAlreadyAnsweredError(TurnStateError):
    """The pause's token was already consumed."""


class PauseExpiredError(TurnStateError):
    """The token is past its max age."""


class PauseNotAnsweredError(TurnStateError):
    """``resumed(jti)`` of a pause that is not answered (pending or expired): nothing to continue yet."""


class CheckpointFieldError(TurnStateError, ValueError):
    """A value handed to a port breaks a limit; refused before anything is written.

    A ``ValueError`` too, so code that validates input generically still catches it.
    """

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


class AnswerValidationError(TurnStateError, ValueError):
    """The answer does not conform to the pause's ``answer_schema``; nothing was consumed.

    ``messages`` lists every violation, each prefixed with where in the answer it is
    (``$`` is the answer itself), so a person can correct all of them at once.
    """

    def __init__(self, messages: list[str]) -> None:
        self.messages = list(messages)
        super().__init__(
            "the answer does not conform to the pause's answer_schema: " + "; ".join(self.messages)
        )


class ContinuationRefused(TurnStateError):  # noqa: N818 - the agreed public name
    """Raised inside a continuation's ``run``: the run will not continue, for ``reason``.

    The continuation is recorded as failed with that reason (listed for operators), and
    ``continue_once`` returns ``ContinueResult(ran=False, reason=reason)``.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class ThreadBusyError(TurnStateError):
    """Another continuation of the same thread held its turn for longer than this one would wait.

    Nothing ran and the continuation's claim was released: delivering it again retries.
    """


class KeyRingError(TurnStateError):
    """The keys of a thread cannot be had: the key ring raised, or gave something other than a
    non-empty list of Fernet keys (``ENCRYPTION_KEYS`` is the ring every thread shares).

    Its own class, never an unreadable record: the values are intact and become readable once
    the keys are back, so nothing is written in clear meanwhile and an HTTP face answers 503.
    The message names the thread and the ring, never a key.
    """
