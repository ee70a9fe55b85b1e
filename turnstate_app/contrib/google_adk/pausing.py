"""``pause_confirmations``: an ADK invocation that waits for tool confirmations becomes one group of pauses.

ADK keeps the invocation in its session: the confirmation calls are events there, and the
invocation goes on from them. So a pause stores no state of its own beyond its turn state (the
invocation's address, :mod:`~turnstate_app.contrib.google_adk.address`): its ``thread_id`` and
``session_id`` are the ADK session's id, its ``run_id`` the invocation's, its ``checkpoint_id``
the id of the event that asked, and its ``tool_call_id`` the id of the tool call held back. The
confirmations one invocation asks at once are one group: it continues once, when the last one
is answered (:mod:`turnstate_app.contrib.google_adk.continuing`).

Each pause records the name of the ``App`` (or root agent) that ran: only a runner of that app
continues it, and ``TURNSTATE["AGENTS"]`` finds it by that name. A root agent's sessions are
the app of its own name (``Runner(agent=agent, app_name=agent.name, ...)``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from asgiref.sync import sync_to_async
from django.db import router, transaction

from turnstate_app.contrib.google_adk.address import address, turn_messages
from turnstate_app.contrib.google_adk.confirmations import Confirmation, answer_schema, pending_confirmations
from turnstate_app.contrib.google_adk.errors import NothingToConfirmError, UnnamedAgentError
from turnstate_app.models import Pause
from turnstate_app.pauses import MintedPause, mint_pause

GROUP_PREFIX = "google-adk:"


def pause_confirmations(
    events: Iterable[Any],
    *,
    agent: Any,
    user_id: str,
    session_id: str,
    invocation_id: str,
    owner: Any = None,
    owners: Mapping[str, Any] | None = None,
) -> list[MintedPause]:
    """One pause per confirmation the invocation ``invocation_id`` waits on in ``events``, one group.

    ``events``: the invocation's events (what ``runner.run_async`` yielded, or the session's).
    ``agent``: the ADK ``App`` the runner ran, or its root agent; its name is recorded.
    ``owners`` maps a tool call id to the owner of its pause (``owner`` for the others). The
    pauses are minted in one transaction: all of them, or none.
    """
    name = agent_name(agent)
    confirmations = pending_confirmations(events, invocation_id)
    if not confirmations:
        raise NothingToConfirmError(
            f"invocation {invocation_id!r} waits on no tool confirmation in the events given; "
            "nothing to pause"
        )
    unknown = set(owners or {}) - {confirmation.call_id for confirmation in confirmations}
    if unknown:
        raise ValueError(f"owners names tool calls the invocation does not wait on: {sorted(unknown)}")
    where = address(app_name=name, user_id=user_id, session_id=session_id, invocation_id=invocation_id)
    with transaction.atomic(using=router.db_for_write(Pause)):
        return [
            mint_pause(
                **fields,
                agent=name,
                owner=owners[fields["tool_call_id"]]
                if owners and fields["tool_call_id"] in owners
                else owner,
            )
            for fields in mint_fields(confirmations, where)
        ]


async def apause_confirmations(
    events: Iterable[Any],
    *,
    agent: Any,
    user_id: str,
    session_id: str,
    invocation_id: str,
    owner: Any = None,
    owners: Mapping[str, Any] | None = None,
) -> list[MintedPause]:
    """:func:`pause_confirmations` for async code: one hop onto Django's thread-sensitive executor."""
    minted: list[MintedPause] = await sync_to_async(pause_confirmations, thread_sensitive=True)(
        list(events),
        agent=agent,
        user_id=user_id,
        session_id=session_id,
        invocation_id=invocation_id,
        owner=owner,
        owners=owners,
    )
    return minted


def agent_name(agent: Any) -> str:
    """The name a pause records for ``agent`` (an ``App`` or a root agent); refused when it has none."""
    name = getattr(agent, "name", None)
    if not isinstance(name, str) or not name:
        raise UnnamedAgentError(
            "the ADK app or agent has no name, so its pauses could be continued by any runner: "
            'App(name="payments", ...); only a runner of that app continues them'
        )
    return name


def mint_fields(confirmations: list[Confirmation], where: dict[str, str]) -> list[dict[str, Any]]:
    """``mint_pause`` arguments of each confirmation, without owner and agent (the caller's, or carried
    by ``mint_next``)."""
    session_id, invocation_id = where["session_id"], where["invocation_id"]
    group = group_of(
        session_id, invocation_id, [confirmation.confirmation_id for confirmation in confirmations]
    )
    scope = f"{where['app_name']}\x00{where['user_id']}\x00{session_id}"
    scope_hash = hashlib.sha256(scope.encode("utf-8")).hexdigest()
    return [
        {
            "run_id": invocation_id,
            "session_id": session_id,
            "thread_id": session_id,
            "checkpoint_id": confirmation.event_id,
            "scope_hash": scope_hash,
            "tool_call_id": confirmation.call_id,
            "name": confirmation.tool_name,
            "request": confirmation.request(invocation_id),
            "prompt": f"confirmation: {confirmation.tool_name}",
            "messages": turn_messages(where),
            "answer_schema": answer_schema(confirmation.payload),
            "shown": confirmation.shown(where),
            "group": group,
        }
        for confirmation in confirmations
    ]


def group_of(session_id: str, invocation_id: str, confirmation_ids: list[str]) -> str:
    """One group per stop: the invocation, and the confirmations it asked there."""
    key = "\x00".join([session_id, invocation_id, *sorted(confirmation_ids)])
    return GROUP_PREFIX + hashlib.sha256(key.encode("utf-8")).hexdigest()[:40]
