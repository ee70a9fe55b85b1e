"""``pause_approvals``: a run that stopped for tool approvals becomes one group of pauses.

The run's state (``result.to_state()``) is stored first, in the contrib's state row, and the
pauses are minted in the same transaction: no pause exists without the state it continues,
and a failed mint leaves no state behind. Each pause's ``thread_id`` is the SDK session's id
when the run used one (so erasing that thread reaches the state and the session's items),
else the run id; its ``checkpoint_id`` is the state's revision, and ``resumable`` says the
row holds that revision. The pauses of one stop form one group: the run continues once,
when the last one is answered (:mod:`turnstate_app.contrib.openai_agents.continuing`).

Each pause records the agent's name: only an agent of that name continues it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from asgiref.sync import sync_to_async
from django.db import router, transaction

from turnstate_app.contracts import PauseClaims
from turnstate_app.contrib.openai_agents.approvals import ANSWER_SCHEMA, Approval, approvals_of
from turnstate_app.contrib.openai_agents.errors import UnnamedAgentError
from turnstate_app.contrib.openai_agents.session import check_id
from turnstate_app.contrib.openai_agents.states import insert_state, read_state
from turnstate_app.models import Pause
from turnstate_app.pauses import MintedPause, mint_pause

GROUP_PREFIX = "openai-agents:"


def pause_approvals(
    result: Any,
    *,
    agent: Any,
    run_id: str,
    session_id: str | None,
    owner: Any = None,
    owners: Mapping[str, Any] | None = None,
) -> list[MintedPause]:
    """One pause per interruption of ``result``, all in one group, in the SDK's order.

    ``agent``: the agent the run started with (``Runner.run(agent, ...)``); its name is
    recorded. ``session_id``: the id of the SDK ``Session`` the run used, or None. ``owners``
    maps a call id to the owner of its pause (``owner`` for the others).
    """
    name = agent_name(agent)
    check_id("run_id", run_id)
    if session_id is not None:
        check_id("session_id", session_id)
    approvals = approvals_of(result.interruptions)
    if not approvals:
        raise ValueError(
            "the run did not stop for approvals (result.interruptions is empty): nothing to pause"
        )
    unknown = set(owners or {}) - {approval.call_id for approval in approvals}
    if unknown:
        raise ValueError(f"owners names calls the run is not waiting on: {sorted(unknown)}")
    data = result.to_state().to_json()
    thread_id = session_id if session_id is not None else run_id
    with transaction.atomic(using=router.db_for_write(Pause)):
        # A taken run id raises out of this transaction, which rolls back whole: no savepoint.
        revision = insert_state(
            run_id=run_id,
            thread_id=thread_id,
            session_id=session_id,
            agent=name,
            schema_version=str(data.get("$schemaVersion")),
            text=json.dumps(data),
            savepoint=False,
        )
        minted: list[MintedPause] = []
        # The state row is this transaction's own: no one can erase it before the pauses commit
        # with it, so it is not read back to earn ``resumable``.
        for fields in mint_fields(approvals, run_id=run_id, revision=revision, written_here=True):
            call_id = fields["tool_call_id"]
            minted.append(
                mint_pause(
                    **fields,
                    run_id=run_id,
                    session_id=session_id or "",
                    thread_id=thread_id,
                    agent=name,
                    owner=owners[call_id] if owners is not None and call_id in owners else owner,
                )
            )
        return minted


async def apause_approvals(
    result: Any,
    *,
    agent: Any,
    run_id: str,
    session_id: str | None,
    owner: Any = None,
    owners: Mapping[str, Any] | None = None,
) -> list[MintedPause]:
    """:func:`pause_approvals` for async code: one hop onto Django's thread-sensitive executor."""
    minted: list[MintedPause] = await sync_to_async(pause_approvals, thread_sensitive=True)(
        result, agent=agent, run_id=run_id, session_id=session_id, owner=owner, owners=owners
    )
    return minted


def agent_name(agent: Any) -> str:
    """The name a pause records for ``agent``; refused when it has none."""
    name = getattr(agent, "name", None)
    if not isinstance(name, str) or not name:
        raise UnnamedAgentError(
            "the agent has no name, so its pauses could be continued by any agent: "
            'Agent(name="payments", ...); only an agent of that name continues them'
        )
    return name


def mint_fields(
    approvals: list[Approval], *, run_id: str, revision: str, written_here: bool = False
) -> list[dict[str, Any]]:
    """``mint_pause`` arguments of each approval, without the run's ids, owner and agent (the
    caller's, or carried by ``mint_next``). ``written_here``: the state row at ``revision`` was
    written in the mint's own transaction, so ``resumable`` needs no read of it."""
    group = group_of(run_id, revision)
    scope_hash = hashlib.sha256(run_id.encode("utf-8")).hexdigest()
    return [
        {
            "checkpoint_id": revision,
            "scope_hash": scope_hash,
            "tool_call_id": approval.call_id,
            "name": approval.tool_name,
            "request": approval.request(run_id),
            "prompt": f"approval: {approval.tool_name}",
            "messages": [],  # the run's state is the contrib's row, read at continuation
            "answer_schema": ANSWER_SCHEMA,
            "shown": approval.shown(),
            "group": group,
            "resumable_check": None if written_here else stored_at_revision,
        }
        for approval in approvals
    ]


def group_of(run_id: str, revision: str) -> str:
    """One group per stop: the run at the revision its state was stored under."""
    digest = hashlib.sha256(f"{run_id}\x00{revision}".encode()).hexdigest()
    return GROUP_PREFIX + digest[:40]


def stored_at_revision(claims: PauseClaims) -> bool:
    """``resumable``: the state row holds the run at the pause's revision."""
    stored = read_state(claims.run_id)
    return stored is not None and stored.revision == claims.checkpoint_id
