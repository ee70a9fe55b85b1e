"""``continue_run``: the run continues once, when the last pause of its group is answered.

Through the lifecycle's ``continue_once``: another agent is refused before anything is
claimed; a group still waiting continues nothing; the continuation is claimed once across
processes, so a redelivered answer runs nothing again. Then, holding the thread's turn:

1. the run's latest state is read from its row, at the revision the pauses were minted for
   (a state that moved on is refused), and rebuilt with ``RunState.from_string``; a state
   this SDK cannot read (a newer schema, written before a rollback), or that fails its MAC or
   does not decrypt (altered at rest, or its thread's key is gone), is refused with that reason,
   and the run's pending pauses are listed as unresumable with it (also when the answer that came
   finds its group still waiting). This binds the run to the state its pauses were minted from:
   a pause records the revision (its ``checkpoint_id``, under the pause's own MAC and the token's
   signature) and the row's MAC names its revision, so only the value written at that revision
   reads back; an older value put back with its then-valid MAC, under either revision, is refused;
2. each interruption is read again where the SDK will run it: its tool, call id and
   arguments must have the digest its pause recorded (``still_shown``), so an approval
   binds to exactly what its person saw; and every interruption must be answered;
3. each approval or rejection is applied, ``Runner.run`` runs once, and the new state
   replaces the row by compare-and-set; new interruptions become the next group
   (``mint_next``: owner, agent, session and run carried on).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agents import Runner, RunState
from agents import version as sdk_version
from agents.run_state import SUPPORTED_SCHEMA_VERSIONS
from asgiref.sync import async_to_sync, sync_to_async

from turnstate_app.contrib.openai_agents.approvals import approval_of, approvals_of, decision
from turnstate_app.contrib.openai_agents.errors import UnreadableRunStateError
from turnstate_app.contrib.openai_agents.pausing import mint_fields
from turnstate_app.contrib.openai_agents.session import DjangoSession
from turnstate_app.contrib.openai_agents.states import StoredState, read_state, replace_state
from turnstate_app.errors import ContinuationRefused
from turnstate_app.models import Pause
from turnstate_app.pauses import Continuation, ContinueResult, ResumedPause, acontinue_once, continue_once
from turnstate_app.pauses.continuation import REASON_GROUP_INCOMPLETE


def continue_run(
    agent: Any, resumed: ResumedPause, *, session: Any = None, **run_options: Any
) -> ContinueResult:
    """Continue ``agent``'s run for ``resumed``'s group once; ``ran=False`` (with a reason) otherwise.

    ``session``: the SDK ``Session`` the run uses (default: a :class:`DjangoSession` of the
    session id the pauses recorded, if any). ``output`` is the run's ``final_output`` (None
    when it stopped again: ``minted`` holds the next pauses). ``run_options`` go to
    ``Runner.run`` as given (``max_turns``, ``run_config``, ``hooks``...; the context comes back with
    the state).
    """
    latest = _Latest(agent, resumed.claims.run_id, resumed.claims.checkpoint_id)

    def run(continuation: Continuation) -> Any:
        advanced = async_to_sync(_advance)(agent, continuation, latest, session, run_options)
        return _store(continuation, latest, advanced)

    result = continue_once(resumed, run, agent=agent.name, still_shown=latest.shown_sync)
    if result.reason == REASON_GROUP_INCOMPLETE:
        flag_unreadable(resumed.claims.run_id)
    return result


async def acontinue_run(
    agent: Any, resumed: ResumedPause, *, session: Any = None, **run_options: Any
) -> ContinueResult:
    """:func:`continue_run` for async code."""
    latest = _Latest(agent, resumed.claims.run_id, resumed.claims.checkpoint_id)

    async def run(continuation: Continuation) -> Any:
        advanced = await _advance(agent, continuation, latest, session, run_options)
        return await sync_to_async(_store, thread_sensitive=True)(continuation, latest, advanced)

    result = await acontinue_once(resumed, run, agent=agent.name, still_shown=latest.shown)
    if result.reason == REASON_GROUP_INCOMPLETE:
        await sync_to_async(flag_unreadable, thread_sensitive=True)(resumed.claims.run_id)
    return result


def unreadable_reason(stored: StoredState) -> str:
    return (
        f"the stored state of run {stored.run_id!r} is written in RunState schema "
        f"{stored.schema_version!r}, which openai-agents {sdk_version.__version__} does not read "
        f"(it reads {', '.join(sorted(SUPPORTED_SCHEMA_VERSIONS))}): continue it with the SDK that wrote it"
    )


def flag_unreadable(run_id: str, stored: StoredState | None = None) -> None:
    """List the run's pending pauses as unresumable when its stored state's schema is one this SDK
    does not read, or it does not decrypt (a group still waiting would otherwise look continuable
    until its last answer)."""
    if stored is None:
        try:
            stored = read_state(run_id)
        except UnreadableRunStateError as exc:
            flag_undecryptable(run_id, exc)
            return
    if stored is not None and stored.schema_version not in SUPPORTED_SCHEMA_VERSIONS:
        Pause.objects.filter(run_id=run_id, thread_id=stored.thread_id).mark_unresumable(
            unreadable_reason(stored)
        )


def flag_undecryptable(run_id: str, error: UnreadableRunStateError) -> None:
    """List the run's pending pauses as unresumable: its state does not decrypt (the error names
    the run, the thread and the key id, never the value)."""
    Pause.objects.filter(run_id=run_id).mark_unresumable(str(error))


@dataclass
class _Latest:
    """The run's state as one continuation reads it before the agent runs: loaded once, by the
    question's check (``still_shown``) or else by the run, and used by both, its interruptions
    listed once (the SDK copies each of them on every listing)."""

    agent: Any
    run_id: str
    revision: str
    stored: StoredState | None = None
    state: Any = None
    pending: dict[str, Any] = field(default_factory=dict)
    """The state's interruptions by call id."""

    def read(self) -> StoredState:
        """The stored row at the pauses' revision, in a schema this SDK reads; else refused."""
        try:
            stored = read_state(self.run_id)
        except UnreadableRunStateError as exc:
            flag_undecryptable(self.run_id, exc)
            raise ContinuationRefused(f"{exc}; nothing was run") from None
        if stored is None:
            raise ContinuationRefused(f"run {self.run_id!r} has no stored state (erased?); nothing was run")
        if stored.revision != self.revision:
            raise ContinuationRefused(
                f"the state of run {self.run_id!r} moved on: the pauses were minted at revision "
                f"{self.revision}, the stored state is at {stored.revision}; nothing was run"
            )
        if stored.schema_version not in SUPPORTED_SCHEMA_VERSIONS:
            flag_unreadable(self.run_id, stored)
            raise ContinuationRefused(unreadable_reason(stored))
        return stored

    async def rebuild(self, stored: StoredState) -> Any:
        try:
            return await RunState.from_string(self.agent, stored.text)
        except Exception as exc:
            raise ContinuationRefused(
                f"the stored state of run {self.run_id!r} cannot be read by openai-agents "
                f"{sdk_version.__version__} ({type(exc).__name__}: {exc}); nothing was run"
            ) from None

    def keep(self, stored: StoredState, state: Any) -> None:
        self.pending = pending_of(state)
        self.state, self.stored = state, stored

    async def load(self) -> None:
        if self.state is None:
            stored = await sync_to_async(self.read, thread_sensitive=True)()
            self.keep(stored, await self.rebuild(stored))

    def load_sync(self) -> None:
        if self.state is None:
            stored = self.read()
            self.keep(stored, async_to_sync(self.rebuild)(stored))

    async def shown(self, member: ResumedPause) -> Any:
        """What the run would execute for ``member``'s call, as its pause showed it."""
        await self.load()
        return self.shown_of(member)

    def shown_sync(self, member: ResumedPause) -> Any:
        """:meth:`shown` for sync code."""
        self.load_sync()
        return self.shown_of(member)

    def shown_of(self, member: ResumedPause) -> Any:
        item = self.pending.get(member.claims.tool_call_id or "")
        if item is None:
            raise ContinuationRefused(
                f"call {member.claims.tool_call_id!r} no longer waits for approval in run "
                f"{self.run_id!r}; nothing was run"
            )
        return approval_of(item).shown()


def pending_of(state: Any) -> dict[str, Any]:
    """A state's interruptions by call id."""
    return {approval_of(item).call_id: item for item in state.get_interruptions()}


@dataclass(frozen=True)
class _Advanced:
    """What one run of the agent left: its result and its new state, as the SDK serialised it."""

    result: Any
    data: dict[str, Any]


async def _advance(
    agent: Any, continuation: Continuation, latest: _Latest, session: Any, run_options: dict[str, Any]
) -> _Advanced:
    """The SDK's part: each answer applied to the state, the agent run once, its new state."""
    await latest.load()
    pending, state, stored = latest.pending, latest.state, latest.stored
    assert stored is not None
    answers = {str(member.claims.tool_call_id): member.answer for member in continuation.members}
    unanswered = sorted(set(pending) - set(answers))
    gone = sorted(set(answers) - set(pending))
    if unanswered or gone:
        raise ContinuationRefused(
            f"run {latest.run_id!r} waits on calls {sorted(pending)}, and this group answers "
            f"{sorted(answers)}; nothing was run"
        )
    session = _session(session, stored)
    for call_id, answer in answers.items():
        approved, message = decision(answer)
        if approved:
            state.approve(pending[call_id])
        else:
            state.reject(pending[call_id], rejection_message=message)
    result = await Runner.run(agent, state, session=session, **run_options)
    return _Advanced(result, result.to_state().to_json())


def _store(continuation: Continuation, latest: _Latest, advanced: _Advanced) -> Any:
    """The database's part, on the caller's thread in one go: the new state by compare-and-set, then
    its interruptions as the next group; the run's final output."""
    stored, data, result = latest.stored, advanced.data, advanced.result
    assert stored is not None
    revision = replace_state(
        latest.run_id,
        json.dumps(data),
        expected_revision=stored.revision,
        schema_version=str(data.get("$schemaVersion")),
        thread_id=stored.thread_id,
    )
    if result.interruptions:
        for fields in mint_fields(
            approvals_of(result.interruptions), run_id=latest.run_id, revision=revision
        ):
            continuation.mint_next(**fields)
    return result.final_output


def _session(session: Any, stored: StoredState) -> Any:
    """The session the run goes on with: the one given (it must be the run's), else the run's own."""
    if session is None:
        return DjangoSession(stored.session_id) if stored.session_id else None
    if getattr(session, "session_id", None) != stored.session_id:
        raise ContinuationRefused(
            f"run {stored.run_id!r} used session {stored.session_id!r}, and this continuation was given "
            f"{getattr(session, 'session_id', None)!r}; nothing was run"
        )
    return session
