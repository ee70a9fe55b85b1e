"""The frozen compatibility keys a pause writes its request under.

Tokens in flight point at these keys, so they never change. New kinds of rows get
new prefixes (see :mod:`turnstate_app.turnstate`) instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from turnstate_app.errors import PayloadBindingError

if TYPE_CHECKING:
    from turnstate_app.contracts import PauseClaims

ASK_USER_REQUEST_KEY_PREFIX = "ask_user_request:"
INTERRUPT_PAYLOAD_KEY_PREFIX = "interrupt_payload:"
REQUEST_KEY_PREFIXES = (ASK_USER_REQUEST_KEY_PREFIX, INTERRUPT_PAYLOAD_KEY_PREFIX)


def payload_key(claims: PauseClaims) -> str:
    """Where the pause's request lives: by tool call when there is one, else by interrupt."""
    if claims.tool_call_id:
        return f"{ASK_USER_REQUEST_KEY_PREFIX}{claims.tool_call_id}"
    if claims.interrupt_id:
        return f"{INTERRUPT_PAYLOAD_KEY_PREFIX}{claims.interrupt_id}"
    raise PayloadBindingError(
        "these pause claims carry neither a tool_call_id nor an interrupt_id, "
        "so they name no request that could have been recorded"
    )


ANSWER_KEY_PREFIX = "answer:"


def answer_key(claims: PauseClaims) -> str:
    """Where the person's answer is stored once the token is consumed: one per mint."""
    if not claims.jti:
        raise PayloadBindingError("these pause claims carry no jti, so their answer has no key")
    return f"{ANSWER_KEY_PREFIX}{claims.jti}"
