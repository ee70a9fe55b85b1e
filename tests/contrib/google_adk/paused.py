"""Pausing the payments app's first invocation, in the tests' process."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from asgiref.sync import async_to_sync
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService

from tests.contrib.google_adk.agents import FIRST, afirst_run, payments_app, runner_for
from turnstate_app.contrib.google_adk import pause_confirmations
from turnstate_app.pauses import MintedPause, resume_pause

CONFIRM = {"confirmed": True}
REJECT = {"confirmed": False}
BOOK_ANSWER = {"confirmed": True, "payload": {"day": "tuesday", "seats": 3}}


@dataclass
class Paused:
    """An invocation stopped for ``pay`` and ``book``, and its pauses by tool name."""

    runner: Runner
    user_id: str
    session_id: str
    invocation_id: str
    events: list[Any]
    pauses: dict[str, MintedPause]

    def answer(self, **answers: Any) -> list[Any]:
        return [resume_pause(self.pauses[name].token, value) for name, value in answers.items()]


def paused(
    session_service: Any = None,
    *,
    text: str = FIRST,
    user_id: str = "alice",
    owner: Any = None,
    **options: Any,
) -> Paused:
    """The first invocation, run and paused (in memory unless a session service is given)."""
    runner = runner_for(payments_app(**options), session_service or InMemorySessionService())
    session_id, events = async_to_sync(afirst_run)(runner, user_id=user_id, text=text)
    invocation_id = events[-1].invocation_id
    minted = pause_confirmations(
        events,
        agent=runner.app,
        user_id=user_id,
        session_id=session_id,
        invocation_id=invocation_id,
        owner=owner,
    )
    pauses = {pause.claims.name or "": pause for pause in minted}
    return Paused(runner, user_id, session_id, invocation_id, events, pauses)


def said(events: list[Any] | None) -> str:
    """What the model said in ``events`` (a continuation's output)."""
    return " ".join(
        part.text
        for event in events or []
        for part in (event.content.parts if event.content else [])
        if part.text
    )
