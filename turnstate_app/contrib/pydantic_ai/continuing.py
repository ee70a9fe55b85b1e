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

Before the agent runs, each deferred call is read again where PydanticAI will execute it (the
conversation's last response): a call whose tool or arguments changed since its pause was
minted is refused (``still_shown``), and nothing runs. So is a run whose start changed: the
messages up to the deferred calls, and the calls, as the pauses recorded them
(:mod:`turnstate_app.contrib.pydantic_ai.start`) — a history cut short, reordered or edited, or a
record set back to older deferred calls. Every row it loads has verified its MAC first; one that
does not is an unreadable record, and the continuation is refused with it. The conversation that
check loads is the one the run continues from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from asgiref.sync import async_to_sync
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationStore
from pydantic_ai.messages import ModelResponse
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults

from turnstate_app.contrib.pydantic_ai.deferred import APPROVAL, approval_result, shown_call, tool_schemas
from turnstate_app.contrib.pydantic_ai.pausing import mint_fields
from turnstate_app.contrib.pydantic_ai.start import history_changed, start_of, transcript
from turnstate_app.contrib.pydantic_ai.store import records_kept
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

    latest = _Latest(store, resumed.claims.thread_id)

    def run(continuation: Continuation) -> Any:
        return async_to_sync(_continue)(agent, continuation, latest, run_options)

    def still_shown(member: ResumedPause) -> Any:
        return async_to_sync(latest.shown)(member)

    with records_kept(resumed.claims.thread_id):
        return continue_once(resumed, run, agent=_name(agent), still_shown=still_shown)


async def acontinue_agent(
    agent: Any, resumed: ResumedPause, *, store: ConversationStore, **run_options: Any
) -> ContinueResult:
    """:func:`continue_agent` for async code."""

    latest = _Latest(store, resumed.claims.thread_id)

    async def run(continuation: Continuation) -> Any:
        return await _continue(agent, continuation, latest, run_options)

    with records_kept(resumed.claims.thread_id):
        return await acontinue_once(resumed, run, agent=_name(agent), still_shown=latest.shown)


def _name(agent: Any) -> str | None:
    name = getattr(agent, "name", None)
    return name if isinstance(name, str) and name else None


@dataclass
class _Latest:
    """The latest conversation as one continuation reads it before the agent runs: loaded once,
    by the question's check (``still_shown``) or else by the run, and used by both."""

    store: ConversationStore
    conversation_id: str
    conversation: Conversation | None = None
    messages: list[dict[str, Any]] | None = None
    start: dict[str, Any] | None = None

    async def load(self) -> Conversation:
        if self.conversation is None:
            try:
                self.conversation = await self.store.load(self.conversation_id)
            except LookupError as gone:  # the record's head, or an entry it leads to, was deleted
                raise ContinuationRefused(
                    f"conversation {self.conversation_id!r}: its stored history is incomplete (entry "
                    f"{gone} is gone) since its pauses were minted; nothing was run"
                ) from None
            if self.conversation is None:
                raise ContinuationRefused(f"conversation {self.conversation_id!r} is not in the store")
        return self.conversation

    async def shown(self, member: ResumedPause) -> Any:
        """What the run would execute for ``member``'s call and the state it starts from
        (:func:`shown_call`; None: no such call in the last response), or the refusal the run
        gives when the call is no longer deferred, or when the history is not the one the group's
        first pause recorded."""
        conversation = await self.load()
        call_id = member.claims.tool_call_id
        if call_id not in _waiting(conversation):
            deferred_results(conversation, [member])  # raises: no longer deferred
        start = self.started(conversation, member)
        for message in reversed(conversation.messages):
            if isinstance(message, ModelResponse):
                for part in message.tool_calls:
                    if part.tool_call_id == call_id:
                        return shown_call(part.tool_name, part.args_as_dict(), start)
                return None
        return None

    def started(self, conversation: Conversation, member: ResumedPause) -> dict[str, Any]:
        """The start of the run (:func:`start_of`), computed once; refused first when ``member``
        recorded the transcript (the group's first pause) and the loaded history is not it."""
        if self.messages is None or self.start is None:
            self.messages = transcript(conversation)
            self.start = start_of(self.messages, conversation.deferred_tool_requests)
        recorded = member.checkpoint.messages if member.checkpoint is not None else []
        if recorded:
            changed = history_changed(member.claims.jti, self.conversation_id, recorded, self.messages)
            if changed is not None:
                raise ContinuationRefused(changed)
        return self.start


def _waiting(conversation: Conversation) -> set[str]:
    """The tool call ids the conversation waits on."""
    requests = conversation.deferred_tool_requests
    if requests is None:
        return set()
    return {part.tool_call_id for part in [*requests.approvals, *requests.calls]}


async def _continue(
    agent: Any, continuation: Continuation, latest: _Latest, run_options: dict[str, Any]
) -> Any:
    store = latest.store
    conversation_id = latest.conversation_id
    conversation = await latest.load()
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
    waiting = _waiting(conversation)
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
