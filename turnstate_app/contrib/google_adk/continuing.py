"""``continue_invocation``: the invocation goes on once, when the last confirmation of its group is answered.

Through the lifecycle's ``continue_once``: a runner of another app is refused before anything is
claimed; a group still waiting continues nothing; the continuation is claimed once across
processes, so a redelivered answer runs nothing again. Then, holding the session's turn:

1. the session is read from the runner's session service (``DjangoSessionService`` in the
   hand-off task) at the address the pause recorded; a session that is gone is refused;
2. each answered confirmation is read again where ADK will run it: the event that asked (the
   pause's ``checkpoint_id``, of the pause's invocation) must still hold it, unanswered, and the
   tool call it holds back must be in the session as the model made it (same tool, same
   arguments). Its tool, call id, arguments, hint and payload must have the digest its pause
   recorded (``still_shown``), so a confirmation binds to exactly what its person saw; and every
   confirmation the invocation waits on must be answered by the group;
3. the answers become ``adk_request_confirmation`` function responses in one user message, and
   ``runner.run_async`` resumes the same invocation with it, once. A rejection reaches ADK as
   ``confirmed: false``: a gated tool is not run, and the model is told so. Confirmations the
   invocation asks next become the next group (``mint_next``: owner and agent carried on).

``output`` is the list of events the resumed invocation yielded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import async_to_sync
from google.genai import types

from turnstate_app.contrib.google_adk.address import address_of
from turnstate_app.contrib.google_adk.confirmations import (
    REQUEST_CONFIRMATION,
    Confirmation,
    answered_ids,
    confirmation_of,
    pending_confirmations,
)
from turnstate_app.contrib.google_adk.pausing import mint_fields
from turnstate_app.errors import ContinuationRefused
from turnstate_app.pauses import Continuation, ContinueResult, ResumedPause, acontinue_once, continue_once


def continue_invocation(runner: Any, resumed: ResumedPause) -> ContinueResult:
    """Resume the invocation of ``resumed``'s group with ``runner`` once; ``ran=False`` (with a reason)
    otherwise. ``runner``: an ADK ``Runner`` of the app the pauses recorded, over the session service
    that holds the session."""
    latest = _Invocation(runner, resumed)

    def run(continuation: Continuation) -> Any:
        return async_to_sync(_continue)(runner, continuation, latest)

    return continue_once(resumed, run, agent=runner.app_name, still_shown=latest.shown_sync)


async def acontinue_invocation(runner: Any, resumed: ResumedPause) -> ContinueResult:
    """:func:`continue_invocation` for async code."""
    latest = _Invocation(runner, resumed)

    async def run(continuation: Continuation) -> Any:
        return await _continue(runner, continuation, latest)

    return await acontinue_once(resumed, run, agent=runner.app_name, still_shown=latest.shown)


@dataclass
class _Invocation:
    """The session as one continuation reads it before ADK runs: loaded once, by the question's
    check (``still_shown``) or else by the run, and used by both."""

    runner: Any
    resumed: ResumedPause
    where: dict[str, str] = field(default_factory=dict)
    session: Any = None

    async def load(self) -> Any:
        if self.session is None:
            self.where = address_of(self.resumed, self.runner.app_name)
            session = await self.runner.session_service.get_session(
                app_name=self.where["app_name"],
                user_id=self.where["user_id"],
                session_id=self.where["session_id"],
            )
            if session is None:
                raise ContinuationRefused(
                    f"ADK session {self.where['session_id']!r} of app {self.where['app_name']!r} is not in "
                    "the runner's session service (erased, or another service); nothing was run"
                )
            self.session = session
        return self.session

    def load_sync(self) -> Any:
        if self.session is None:
            async_to_sync(self.load)()
        return self.session

    async def shown(self, member: ResumedPause) -> Any:
        """What ADK would run for ``member``'s confirmation, as its pause showed it."""
        await self.load()
        return self.confirmation(member).shown(self.where)

    def shown_sync(self, member: ResumedPause) -> Any:
        """:meth:`shown` for sync code."""
        self.load_sync()
        return self.confirmation(member).shown(self.where)

    def confirmation(self, member: ResumedPause) -> Confirmation:
        """``member``'s confirmation as the session holds it; refused when it is gone, answered
        already, or holds back a tool call the session does not hold as the model made it."""
        claims = member.claims
        events = self.session.events
        event = next((event for event in events if event.id == claims.checkpoint_id), None)
        if event is None or event.invocation_id != claims.run_id:
            raise ContinuationRefused(
                f"event {claims.checkpoint_id!r} of invocation {claims.run_id!r}, which asked for pause "
                f"{claims.jti}, is not in the session; nothing was run"
            )
        try:
            asked = [confirmation_of(call, event) for call in event.get_function_calls()]
        except ValueError as exc:
            raise ContinuationRefused(f"{exc}; nothing was run") from None
        found = next(
            (each for each in asked if each is not None and each.call_id == claims.tool_call_id), None
        )
        if found is None:
            raise ContinuationRefused(
                f"event {claims.checkpoint_id!r} no longer asks to confirm call {claims.tool_call_id!r}; "
                "nothing was run"
            )
        if found.confirmation_id in answered_ids(events):
            raise ContinuationRefused(
                f"confirmation {found.confirmation_id!r} was answered in the session already; nothing was run"
            )
        made = [
            call
            for stored in events
            if stored.author != "user"
            for call in stored.get_function_calls()
            if call.id == found.call_id and call.name != REQUEST_CONFIRMATION
        ]
        if len(made) != 1 or made[0].name != found.tool_name or dict(made[0].args or {}) != found.arguments:
            raise ContinuationRefused(
                f"tool call {found.call_id!r} is not in the session as the confirmation asks about it "
                f"({found.tool_name} with the arguments shown); nothing was run"
            )
        return found


async def _continue(runner: Any, continuation: Continuation, latest: _Invocation) -> Any:
    session = await latest.load()
    where = latest.where
    answered = [(latest.confirmation(member), member.answer) for member in continuation.members]
    try:
        waiting = {each.call_id for each in pending_confirmations(session.events, where["invocation_id"])}
        parts = [
            types.Part(
                function_response=types.FunctionResponse(
                    name=REQUEST_CONFIRMATION,
                    id=confirmation.confirmation_id,
                    response=confirmation.response(answer),
                )
            )
            for confirmation, answer in answered
        ]
    except ValueError as exc:
        raise ContinuationRefused(f"{exc}; nothing was run") from None
    given = {confirmation.call_id for confirmation, _ in answered}
    if waiting != given:
        raise ContinuationRefused(
            f"invocation {where['invocation_id']!r} waits on calls {sorted(waiting)}, and this group "
            f"answers {sorted(given)}; nothing was run"
        )
    events = [
        event
        async for event in runner.run_async(
            user_id=where["user_id"],
            session_id=where["session_id"],
            invocation_id=where["invocation_id"],
            new_message=types.Content(role="user", parts=parts),
        )
    ]
    asked = pending_confirmations(events, where["invocation_id"])
    if asked:
        for fields in mint_fields(asked, where):
            await continuation.amint_next(**fields)
    return events
