"""The pause lifecycle: mint a pause, answer it exactly once, hand the turn on."""

from turnstate_app.errors import AnswerValidationError, ContinuationRefused
from turnstate_app.pauses.continuation import Continuation, ContinueResult, acontinue_once, continue_once
from turnstate_app.pauses.handoff import ResumedPause, rebuild_resumed
from turnstate_app.pauses.lookup import aresumed, resumed
from turnstate_app.pauses.mint import MintedPause, amint_pause, mint_pause
from turnstate_app.pauses.redelivery import Redelivery, redeliver
from turnstate_app.pauses.resume import aresume_pause, resume_pause
from turnstate_app.pauses.signals import pause_answered, pause_minted

__all__ = [
    "AnswerValidationError",
    "ContinuationRefused",
    "ContinueResult",
    "Continuation",
    "acontinue_once",
    "continue_once",
    "MintedPause",
    "Redelivery",
    "ResumedPause",
    "amint_pause",
    "aresume_pause",
    "aresumed",
    "mint_pause",
    "pause_answered",
    "pause_minted",
    "rebuild_resumed",
    "redeliver",
    "resume_pause",
    "resumed",
]
