"""Every key prefix the store writes under, and the functions that build the keys.

The request prefixes are frozen compatibility contracts: tokens in flight point at them,
so they never change. Every other kind of row gets a prefix of its own, declared here,
so retention and the operators' queries know every kind of row there is.
:mod:`turnstate_app.checkpoints` and :mod:`turnstate_app.turnstate` re-export the names
the contract gives them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from turnstate_app.errors import PayloadBindingError

if TYPE_CHECKING:
    from turnstate_app.contracts import PauseClaims

ASK_USER_REQUEST_KEY_PREFIX = "ask_user_request:"
INTERRUPT_PAYLOAD_KEY_PREFIX = "interrupt_payload:"
REQUEST_KEY_PREFIXES = (ASK_USER_REQUEST_KEY_PREFIX, INTERRUPT_PAYLOAD_KEY_PREFIX)
TURN_STATE_KEY_PREFIX = "turn_state:"
ANSWER_KEY_PREFIX = "answer:"
PER_MINT_KEY_PREFIXES = (TURN_STATE_KEY_PREFIX, ANSWER_KEY_PREFIX)
"""Rows keyed by ``jti``: they belong to exactly one pause and go with it."""
THREAD_TURN_CHECKPOINT_ID = "thread_turn"
THREAD_TURN_KEY_PREFIX = "thread_turn:"
"""The thread's turn: at most one row per thread, held while one continuation of the thread
runs and deleted when it ends; beside it, ``thread_turn:alive:<holder>``, the holder's heartbeat.
Not a pause's row: ``erase_thread`` removes a stale one."""


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


def turn_state_key(claims: PauseClaims) -> str:
    """Where this pause's turn state lives: keyed by ``jti``, the one id unique per mint.

    A resumed run that pauses again on a retry of the same tool call would otherwise
    overwrite the first pause's state with the second's.
    """
    return f"{TURN_STATE_KEY_PREFIX}{_require_jti(claims, 'paused turn state')}"


def answer_key(claims: PauseClaims) -> str:
    """Where the person's answer is stored once the token is consumed: one per mint."""
    return f"{ANSWER_KEY_PREFIX}{_require_jti(claims, 'answer')}"


def thread_turn_key() -> str:
    """The key of a thread's turn row (its place is ``(thread_id, THREAD_TURN_CHECKPOINT_ID)``)."""
    return f"{THREAD_TURN_KEY_PREFIX}current"


def thread_turn_alive_key(holder: str) -> str:
    """The key of the heartbeat row a turn's holder rewrites while its run goes on (same place)."""
    return f"{THREAD_TURN_KEY_PREFIX}alive:{holder}"


def per_mint_keys(jti: str) -> tuple[str, ...]:
    """The keys of every row that belongs to the pause minted as ``jti`` alone."""
    return tuple(prefix + jti for prefix in PER_MINT_KEY_PREFIXES)


def _require_jti(claims: PauseClaims, what: str) -> str:
    if not claims.jti:
        raise PayloadBindingError(
            f"these pause claims carry no jti, so the {what} has no key; nothing could record or recover it"
        )
    return claims.jti
