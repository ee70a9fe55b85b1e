"""Each way an answer can end, as a page: what happened, and what the person can do now.

The same refusals as REST's ``pauses/resume/`` (``turnstate_app.api.exceptions``), with the
same status codes, in words for a person. No exception's own message is shown: it may name
internals (a thread, a jti), and only a record's unreadability may speak of tampering.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import PermissionDenied
from django.db import InterfaceError, OperationalError
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from turnstate_app.errors import (
    KeyRingError,
    PauseAlreadyAnsweredError,
    PauseCheckpointNotFoundError,
    PauseExpiredError,
    PayloadBindingError,
    TokenSignatureError,
)


@dataclass(frozen=True)
class Outcome:
    code: str
    status: int
    heading: Promise
    happened: Promise
    next_step: Promise


BAD_LINK = Outcome(
    "invalid_token",
    400,
    _("This link is not valid"),
    _("The link is incomplete, was changed, or was not issued by this site."),
    _("Open the link from the message again, in full, or find the question in your inbox."),
)
UNREADABLE = Outcome(
    "record_mismatch",
    400,
    _("This question cannot be read"),
    _("What is stored for this question belongs to another turn or cannot be read. Nothing was answered."),
    _("Tell the team that runs this agent; the question cannot be answered here."),
)
NOT_FOUND = Outcome(
    "not_found",
    404,
    _("No such question"),
    _("There is no question here for you: it never existed, was removed, or is someone else's."),
    _("Go back to your inbox to see the questions waiting for you."),
)
NOT_YOURS = Outcome(
    "not_owner",
    403,
    _("This question is not yours to answer"),
    _("Only the person it was asked of, or staff, may answer it. Nothing was answered."),
    _("Go back to your inbox to see the questions waiting for you."),
)
ALREADY_ANSWERED = Outcome(
    "already_answered",
    409,
    _("Already answered"),
    _("This question was answered before; an answer is taken once only."),
    _("Nothing more to do here. Go back to your inbox for other questions."),
)
EXPIRED = Outcome(
    "expired",
    410,
    _("This question has expired"),
    _("It waited longer than it could, and can no longer be answered."),
    _("If the answer is still needed, ask the agent to ask again."),
)
UNAVAILABLE = Outcome(
    "unavailable",
    503,
    _("Try again shortly"),
    _("The answer could not be taken just now. Nothing was answered."),
    _("Wait a moment and open the question again."),
)
ANSWERED = Outcome(
    "answered",
    200,
    _("Thank you, your answer is in"),
    _("The agent's run continues from where it paused."),
    _("Nothing more to do here. Go back to your inbox for other questions."),
)
ANSWERED_NOT_RESUMABLE = Outcome(
    "answered",
    200,
    _("Thank you, your answer is in"),
    _("Your answer is kept, but the run cannot be continued from here: its saved state is missing."),
    _("Tell the team that runs this agent, so they can pick up from your answer."),
)

# Most specific first: a TokenSignatureError is also a PayloadBindingError.
REFUSALS: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], Outcome], ...] = (
    (TokenSignatureError, BAD_LINK),
    (PayloadBindingError, UNREADABLE),
    (PauseCheckpointNotFoundError, NOT_FOUND),
    (PauseAlreadyAnsweredError, ALREADY_ANSWERED),
    (PauseExpiredError, EXPIRED),
    (PermissionDenied, NOT_YOURS),
    ((KeyRingError, OperationalError, InterfaceError), UNAVAILABLE),
)


def refusal(error: BaseException) -> Outcome | None:
    """The page for ``error``; None for an error that is a bug, not a refusal."""
    return next((outcome for kind, outcome in REFUSALS if isinstance(error, kind)), None)


def answered(resumable: bool) -> Outcome:
    return ANSWERED if resumable else ANSWERED_NOT_RESUMABLE
