"""``continue_agent``: the run continues once, when the last pause of its group is answered.

Through the lifecycle's ``continue_once``: a group still waiting continues nothing, the
continuation is claimed once across processes, and a redelivered answer runs nothing
again. The run continues from the **latest** conversation in the store, never from the
pause-time snapshot: a call no longer deferred there (answered, branched away) gives
``ran=False`` and runs nothing, so an approved tool runs once however often the answer
is delivered. New deferred calls of the continued run become the next group, owned by
the continued pause's owner, with its agent's name.

A pause that recorded an agent's name (``pause_deferred(..., agent=...)``) is continued by an
agent of that name only: any other is refused before the continuation is claimed, so the
right agent can still continue it.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationStore
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults

from turnstate_app.contrib.pydantic_ai.deferred import APPROVAL, approval_result, tool_schemas
from turnstate_app.contrib.pydantic_ai.pausing import mint_fields
from turnstate_app.errors import ContinuationRefused
from turnstate_app.pauses import Continuation, ContinueResult, ResumedPause, acontinue_once, continue_once

REASON_NOT_DEFERRED = "no longer deferred in the conversation"


def continue_agent(
    agent: Any, resumed: ResumedPause, *, store: ConversationStore, **run_options: Any
) -> ContinueResult:
    """Continue ``agent``'s run for ``resumed``'s group once; ``ran=False`` (with a reason) otherwise.

    A pause minted with another agent's name is refused before anything is claimed.

    ``output`` is the continued run's output: its answer, or the ``DeferredToolRequests``
    the new pauses (``minted``) stand for. ``run_options`` go to ``agent.run`` as given
    (``deps``, ``model_settings``, ``usage_limits``...).
    """

    def run(continuation: Continuation) -> Any:
        return async_to_sync(_continue)(agent, continuation, store, run_options)

    return continue_once(resumed, run, agent=_name(agent))


async def acontinue_agent(
    agent: Any, resumed: ResumedPause, *, store: ConversationStore, **run_options: Any
) -> ContinueResult:
    """:func:`continue_agent` for async code."""

    async def run(continuation: Continuation) -> Any:
        return await _continue(agent, continuation, store, run_options)

    return await acontinue_once(resumed, run, agent=_name(agent))


def _name(agent: Any) -> str | None:
    name = getattr(agent, "name", None)
    return name if isinstance(name, str) and name else None


async def _continue(
    agent: Any, continuation: Continuation, store: ConversationStore, run_options: dict[str, Any]
) -> Any:
    conversation_id = continuation.resumed.claims.thread_id
    conversation = await store.load(conversation_id)
    if conversation is None:
        raise ContinuationRefused(f"conversation {conversation_id!r} is not in the store")
    results = deferred_results(conversation, continuation.members)
    result = await agent.run(conversation=conversation, deferred_tool_results=results, **run_options)
    await store.save(result)
    if isinstance(result.output, DeferredToolRequests):
        record = await store.read_record(conversation_id)
        for fields in mint_fields(
            result.conversation, result.output, record, store=store, schemas=tool_schemas(agent)
        ):
            await continuation.amint_next(**fields)
    return result.output


def deferred_results(conversation: Conversation, members: list[ResumedPause]) -> DeferredToolResults:
    """Every member's answer, for the calls the conversation still waits on; else refused, saying
    what the latest revision waits on."""
    requests = conversation.deferred_tool_requests
    waiting = (
        set() if requests is None else {part.tool_call_id for part in [*requests.approvals, *requests.calls]}
    )
    answers = {member.claims.tool_call_id: member.answer for member in members}
    gone = sorted(str(call_id) for call_id in answers if call_id not in waiting)
    found = f"revision {conversation.revision} waits on " + (
        f"tool call(s) {', '.join(sorted(waiting))}" if waiting else "no tool call"
    )
    if gone or requests is None:
        raise ContinuationRefused(f"tool call(s) {', '.join(gone)} {REASON_NOT_DEFERRED}: its {found}")
    if waiting - set(answers):
        raise ContinuationRefused(
            f"the conversation's {found}, which this group's pauses do not all answer "
            f"(not: {', '.join(sorted(waiting - set(answers)))})"
        )
    approvals: dict[str, Any] = {}
    calls: dict[str, Any] = {}
    for call_id, answer in answers.items():
        assert call_id is not None
        if requests.kind(call_id) == APPROVAL:
            try:
                approvals[call_id] = approval_result(answer)
            except ValueError as exc:
                raise ContinuationRefused(str(exc)) from None
        else:
            calls[call_id] = answer
    return requests.build_results(approvals=approvals, calls=calls)
