"""Where a paused invocation lives: the ADK app, user and session, and the invocation's id.

ADK finds a session by ``(app_name, user_id, session_id)``. A pause carries the session (its
thread) and the invocation (its run) in its claims; the app is the name the pause records, and
the user is kept in the pause's turn state, the record a continuation starts from. All four are
part of what each pause shows, so an address changed at rest no longer matches what was shown.
"""

from __future__ import annotations

from typing import Any

from turnstate_app.errors import ContinuationRefused
from turnstate_app.pauses import ResumedPause

ADDRESS_KEY = "adk_invocation"


def address(*, app_name: str, user_id: str, session_id: str, invocation_id: str) -> dict[str, str]:
    return {
        "app_name": app_name,
        "user_id": user_id,
        "session_id": session_id,
        "invocation_id": invocation_id,
    }


def turn_messages(where: dict[str, str]) -> list[dict[str, Any]]:
    """The turn state a pause records: the invocation's address (its events are the session's)."""
    return [{ADDRESS_KEY: where}]


def address_of(resumed: ResumedPause, app_name: str) -> dict[str, str]:
    """The address of ``resumed``'s invocation, continued by a runner of ``app_name``; refused when its
    turn state was not recorded (the pause is not resumable) or holds no user."""
    claims = resumed.claims
    messages = resumed.checkpoint.messages if resumed.checkpoint is not None else []
    recorded = messages[0].get(ADDRESS_KEY) if messages and isinstance(messages[0], dict) else None
    user_id = recorded.get("user_id") if isinstance(recorded, dict) else None
    if not isinstance(user_id, str):
        raise ContinuationRefused(
            f"pause {claims.jti} has no recorded ADK invocation (its turn state was not recorded, or is "
            "not a Google ADK pause's); nothing was run"
        )
    return address(
        app_name=app_name, user_id=user_id, session_id=claims.thread_id, invocation_id=claims.run_id
    )
