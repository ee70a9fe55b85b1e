"""``resumable`` as the integration's store earns it, not only the turn-state row.

An integration passes ``resumable_check`` to ``mint_pause`` so a pause calls itself
resumable only when its framework's store also holds the stop (the interrupt pending at
the thread's head, the conversation saved). It is asked only after the turn-state record
landed; a check that raises is a "no", logged, never a failed mint: the person can still
answer, the pause simply does not promise a continuation.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import async_to_sync

from turnstate_app import telemetry
from turnstate_app.contracts import PauseClaims

logger = logging.getLogger(__name__)

ResumableCheck = Callable[[PauseClaims], bool | Awaitable[bool]]
"""A plain function or an ``async def`` (awaited: a coroutine is never mistaken for a "yes")."""


def earned(recorded: bool, check: ResumableCheck | None, claims: PauseClaims) -> bool:
    """What the ledger records as ``resumable``: the record landed, and the check (if any) agrees."""
    if not recorded or check is None:
        return recorded
    try:
        outcome = check(claims)
        if inspect.isawaitable(outcome):
            outcome = async_to_sync(_awaited)(outcome)
        return bool(outcome)
    except Exception as exc:
        logger.warning(
            "resumable_check %r raised for pause %s (thread %s); the pause is recorded as not resumable: %s",
            check,
            claims.jti,
            claims.thread_id,
            telemetry.described(exc),
        )
        return False


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable
