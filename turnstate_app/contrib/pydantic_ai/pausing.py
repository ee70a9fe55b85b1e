"""``pause_deferred``: a run that stopped for deferred tool calls becomes one group of pauses.

PydanticAI refuses partial results ("results need to be provided for all deferred tool
calls"), so the calls of one run are one pause *group*: each is answered on its own (by
its own owner, if ``owners`` says so), and the run continues once, when the last one is
answered (:mod:`turnstate_app.contrib.pydantic_ai.continuing`).

Each pause's ``thread_id`` is the conversation's id and its ``checkpoint_id`` the revision
the run was saved under; ``resumable`` says that save is in the store. The group's turn
state keeps the messages once: the first member (in mint order) records the whole
transcript, the others record none. Continuing runs from the latest conversation in the store,
never from that snapshot; it compares the two, to name what changed when they differ. Each
pause's ``shown`` binds its call and the state its run starts from
(:mod:`turnstate_app.contrib.pydantic_ai.start`).

With ``agent=``, each pause records ``agent.name`` and only an agent of that name continues
the group (:func:`agent_name`); without it no name is recorded and none is checked.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from asgiref.sync import async_to_sync
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationRecord, ConversationStore
from pydantic_ai.run import AgentRunResult
from pydantic_ai.tools import DeferredToolRequests

from turnstate_app.contracts import PauseClaims
from turnstate_app.contrib.pydantic_ai.deferred import DeferredCall, deferred_calls, tool_schemas
from turnstate_app.contrib.pydantic_ai.errors import ConversationNotSavedError, UnnamedAgentError
from turnstate_app.contrib.pydantic_ai.saved import unsaved_reason
from turnstate_app.contrib.pydantic_ai.start import start_of, transcript
from turnstate_app.pauses import MintedPause, amint_pause, mint_pause

GROUP_PREFIX = "pydantic-ai:"


def pause_deferred(
    result: AgentRunResult[Any],
    *,
    store: ConversationStore,
    run_id: str,
    session_id: str,
    owner: Any = None,
    owners: Mapping[str, Any] | None = None,
    agent: Any = None,
) -> list[MintedPause]:
    """One pause per deferred tool call of ``result``, all in one group, in mint order.

    ``result``'s conversation must be saved in ``store`` (``store.save_sync(result)``; in
    async code ``await store.save(result)``) and not saved again since: the pauses continue
    that revision. ``owners`` maps a tool call id to the owner of its pause (``owner`` for the
    others). Pass the ``agent`` that ran: each pause records its name (an agent without one is
    refused, :class:`UnnamedAgentError`), so only that agent continues the group, and stores
    its tool's parameter schema, so override arguments are checked on answer. Without
    ``agent`` neither is recorded or checked.
    """
    name = agent_name(agent)
    conversation, requests = _paused(result)
    record = _read_record_blocking(store, conversation.conversation_id)
    members = _members(conversation, requests, record, store, agent, name, owner, owners)
    return [mint_pause(**fields, run_id=run_id, session_id=session_id) for fields in members]


async def apause_deferred(
    result: AgentRunResult[Any],
    *,
    store: ConversationStore,
    run_id: str,
    session_id: str,
    owner: Any = None,
    owners: Mapping[str, Any] | None = None,
    agent: Any = None,
) -> list[MintedPause]:
    """:func:`pause_deferred` for async code."""
    name = agent_name(agent)
    conversation, requests = _paused(result)
    record = await store.read_record(conversation.conversation_id)
    members = _members(conversation, requests, record, store, agent, name, owner, owners)
    return [await amint_pause(**fields, run_id=run_id, session_id=session_id) for fields in members]


def _members(
    conversation: Any,
    requests: Any,
    record: Any,
    store: ConversationStore,
    agent: Any,
    name: str | None,
    owner: Any,
    owners: Mapping[str, Any] | None,
) -> list[dict[str, Any]]:
    """What both twins mint: one set of ``mint_pause`` arguments per deferred call."""
    return mint_fields(
        conversation,
        requests,
        record,
        store=store,
        schemas=tool_schemas(agent),
        owner=owner,
        owners=owners,
        agent=name,
    )


def agent_name(agent: Any) -> str | None:
    """The name a pause records for ``agent`` (None without an agent); refused when it has none."""
    if agent is None:
        return None
    name = getattr(agent, "name", None)
    if not isinstance(name, str) or not name:
        raise UnnamedAgentError(
            "the agent has no name, so its pauses could be continued by any agent: name it, "
            'Agent(..., name="booking"); the name is recorded with each pause and only an agent '
            "of that name continues them (or leave agent= out: then nothing is recorded or checked)"
        )
    return name


def _paused(result: AgentRunResult[Any]) -> tuple[Conversation, DeferredToolRequests]:
    output = result.output
    if not isinstance(output, DeferredToolRequests):
        raise ValueError(
            f"the run did not stop for deferred tool calls (its output is a {type(output).__name__}); "
            "give the agent output_type=[..., DeferredToolRequests]"
        )
    return result.conversation, output


def mint_fields(
    conversation: Conversation,
    requests: DeferredToolRequests,
    record: ConversationRecord | None,
    *,
    store: ConversationStore,
    schemas: Mapping[str, dict[str, Any]],
    owner: Any = None,
    owners: Mapping[str, Any] | None = None,
    agent: str | None = None,
) -> list[dict[str, Any]]:
    """``mint_pause`` keyword arguments for each call (without run and session ids).

    ``agent``: the name to record; left out (a continuation), ``mint_next`` carries the
    continued pause's.
    """
    conversation_id = conversation.conversation_id
    revision = conversation.revision
    reason = unsaved_reason(conversation_id, revision, record, requests)
    if reason is not None:
        raise ConversationNotSavedError(reason)
    assert record is not None and revision is not None  # what unsaved_reason checked
    calls = deferred_calls(requests, schemas)
    unknown = set(owners or {}) - {call.tool_call_id for call in calls}
    if unknown:
        raise ValueError(f"owners names tool calls the run did not defer: {sorted(unknown)}")
    messages = transcript(conversation)
    start = start_of(messages, record.deferred_tool_requests)
    group = group_of(conversation_id, revision)
    scope_hash = hashlib.sha256((record.scope or "").encode("utf-8")).hexdigest()
    check = saved_check(store)
    members: list[dict[str, Any]] = []
    for position, call in enumerate(calls):
        fields = _member(call, conversation_id, revision, scope_hash, group, check, start)
        # The group's transcript is recorded once, with its first member.
        fields["messages"] = messages if position == 0 else []
        if owners is not None and call.tool_call_id in owners:
            fields["owner"] = owners[call.tool_call_id]
        elif owner is not None:
            fields["owner"] = owner
        if agent is not None:
            fields["agent"] = agent
        members.append(fields)
    return members


def _member(
    call: DeferredCall,
    conversation_id: str,
    revision: str,
    scope_hash: str,
    group: str,
    check: Callable[[PauseClaims], bool],
    start: dict[str, Any],
) -> dict[str, Any]:
    return {
        "thread_id": conversation_id,
        "checkpoint_id": revision,
        "scope_hash": scope_hash,
        "tool_call_id": call.tool_call_id,
        "name": call.tool_name,
        "request": call.request(conversation_id),
        "prompt": f"{call.kind}: {call.tool_name}",
        "answer_schema": call.answer_schema(),
        "shown": call.shown(start),
        "group": group,
        "resumable_check": check,
    }


def group_of(conversation_id: str, revision: str) -> str:
    """One group per paused run: the conversation at the revision it was saved under."""
    digest = hashlib.sha256(f"{conversation_id}\x00{revision}".encode()).hexdigest()
    return GROUP_PREFIX + digest[:40]


def saved_check(store: ConversationStore) -> Callable[[PauseClaims], bool]:
    """``resumable`` for a member: the store holds the conversation at the pause's revision."""

    def check(claims: PauseClaims) -> bool:
        record = _read_record_blocking(store, claims.thread_id)
        return record is not None and record.revision == claims.checkpoint_id

    return check


def _read_record_blocking(store: ConversationStore, conversation_id: str) -> ConversationRecord | None:
    from turnstate_app.contrib.pydantic_ai.store import DjangoConversationStore

    if isinstance(store, DjangoConversationStore):
        return store.read_record_sync(conversation_id)
    read: Callable[[str], Awaitable[ConversationRecord | None]] = store.read_record
    return async_to_sync(read)(conversation_id)
