"""LangGraph interrupts as turnstate pauses, and answered pauses continued exactly once.

``pause_interrupts`` mints one pause per interrupt pending at the thread's head that no
pause speaks for yet (:mod:`.ledger`), each recording the graph's name (:mod:`.identity`).
``continue_graph`` hands the answered pause to the lifecycle's ``continue_once``, which
refuses another graph, claims the continuation once across processes and takes the
thread's turn; inside it, the answer goes to LangGraph as
``Command(resume={interrupt_id: answer})`` on the thread's head in strict mode, and the
interrupts the run stops at next become pauses of the same owner, session and run.

Why each step is there (each was a reproduced failure, see docs/langgraph.md):

- the interrupt must be pending at the head before resuming, and strict mode refuses it
  too: a re-sent answer in LangGraph's default mode answers the node's *next* question;
- the claim and the thread's turn: two processes continuing one pause both ran the node
  and forked the thread, and two continuing the two halves of a parallel pair did too;
- the ledger check: minting "the pending interrupts" after a partial answer to parallel
  interrupts asked the person the other question again;
- ``mint_next``: pauses minted by a continuation keep the owner of the one answered;
- ``pause_interrupts`` takes the thread's turn (re-entrant: a continuation already holds it):
  two processes pausing one head at once both read "no pause yet" and minted each
  interrupt twice;
- the graph's name, checked before the claim: a hand-off to another graph of the project
  read the thread, found the interrupt "not pending" and spent the continuation;
- the question, checked before the graph runs (``still_shown``): LangGraph re-runs the node
  from the stored state and applies the answer to whatever it asks then, so a pending
  interrupt whose value (or, for a batched review, whose tool calls) changed since the pause
  was minted is refused. The head read for that check is the one the run starts from: no
  statement is added;
- the state the run starts from: the head must be the checkpoint the pause was made at, or a
  later one written on top of it, its lineage followed over rows whose MACs verify. A thread
  set back to an older checkpoint, or moved to another branch, is refused naming which; nothing
  runs. Every row read on the way (the head, its values, its pending writes) is checked against
  its MAC by the saver, and one that fails is an unreadable record: the continuation is refused;
- the pending writes the run starts from (:mod:`.start`): a node that finished in the interrupt's
  step keeps its output there, and a deleted write row (no MAC fails) made it run again on resume.
  Each pause binds their number and identities; the head read for the question's check gives them
  (no statement added), and a continuation of parallel interrupts binds the pauses still pending at
  its checkpoint again to the writes its own run added there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from asgiref.sync import sync_to_async
from langchain_core.runnables import RunnableConfig

from turnstate_app.contracts import PauseClaims
from turnstate_app.contrib.langgraph.identity import name_of, required_name
from turnstate_app.contrib.langgraph.interrupts import (
    PendingInterrupt,
    head_config,
    pending_ids,
    pending_interrupts,
    project_messages,
    scope_of,
    shown_of,
    thread_of,
)
from turnstate_app.contrib.langgraph.ledger import Sibling, already_paused, bind_again, speaking_pauses
from turnstate_app.contrib.langgraph.saver import WriteId, one_head_read, writes_read
from turnstate_app.contrib.langgraph.start import deleted_writes, rebound, shown_with_start
from turnstate_app.contrib.langgraph.strict import is_refused_answer, strict, unknown_interrupt_error
from turnstate_app.pauses import (
    Continuation,
    ContinuationRefused,
    ContinueResult,
    MintedPause,
    ResumedPause,
    acontinue_once,
    amint_pause,
    continue_once,
    mint_pause,
)
from turnstate_app.pauses.thread_turns import aturn_of, turn_of
from turnstate_app.ports import get_default_store

Mint = Callable[..., MintedPause]

INTERRUPTED = "__interrupt__"
"""The key of ``invoke``'s output under which LangGraph lists the interrupts a run stopped at."""


# -- pausing ------------------------------------------------------------------------------


def pause_interrupts(
    graph: Any, config: RunnableConfig, *, run_id: str, session_id: str, owner: Any = None
) -> list[MintedPause]:
    """One pause per interrupt pending at the head of ``config``'s thread that has none yet.

    Each pause records ``graph.name``; a graph with LangGraph's default name is refused
    (:class:`~turnstate_app.contrib.langgraph.errors.UnnamedGraphError`). Every interrupt's
    value is checked to be JSON before the first pause is minted
    (:class:`~turnstate_app.contrib.langgraph.interrupts.InterruptValueError`). The head is
    read and the pauses minted holding the thread's turn, so two callers never both mint one.
    """
    name = required_name(graph)
    head = head_config(config)
    with turn_of(get_default_store(), thread_of(head)), writes_read() as seen:
        snapshot = graph.get_state(head)
        mint = partial(mint_pause, run_id=run_id, session_id=session_id, owner=owner, agent=name)
        return _mint_unpaused(graph, head, snapshot, mint, _writes_at(seen, snapshot))


async def apause_interrupts(
    graph: Any, config: RunnableConfig, *, run_id: str, session_id: str, owner: Any = None
) -> list[MintedPause]:
    """:func:`pause_interrupts` for async code (the graph's state is read with ``aget_state``)."""
    name = required_name(graph)
    head = head_config(config)
    async with aturn_of(get_default_store(), thread_of(head)):
        with writes_read() as seen:
            snapshot = await graph.aget_state(head)
        pending = pending_interrupts(snapshot)
        taken = await sync_to_async(already_paused, thread_sensitive=True)(
            thread_of(head), [p.interrupt_id for p in pending]
        )
        minted = []
        for fields in _mint_fields(graph, head, snapshot, pending, taken, _writes_at(seen, snapshot)):
            minted.append(
                await amint_pause(run_id=run_id, session_id=session_id, owner=owner, agent=name, **fields)
            )
        return minted


def _mint_unpaused(
    graph: Any, head: RunnableConfig, snapshot: Any, mint: Mint, writes: Sequence[WriteId] = ()
) -> list[MintedPause]:
    pending = pending_interrupts(snapshot)
    taken = already_paused(thread_of(head), [p.interrupt_id for p in pending])
    return [mint(**fields) for fields in _mint_fields(graph, head, snapshot, pending, taken, writes)]


def _writes_at(seen: dict[tuple[str, str, str], list[WriteId]], snapshot: Any) -> list[WriteId]:
    """The pending writes of the checkpoint ``snapshot`` was read at, as the saver returned them
    (:func:`~.saver.writes_read`; none for a checkpoint it did not read, or another saver)."""
    configurable = (snapshot.config or {}).get("configurable") or {}
    place = (
        str(configurable.get("thread_id")),
        str(configurable.get("checkpoint_ns") or ""),
        str(configurable.get("checkpoint_id")),
    )
    return list(seen.get(place, []))


def _mint_fields(
    graph: Any,
    head: RunnableConfig,
    snapshot: Any,
    pending: list[PendingInterrupt],
    taken: set[str],
    writes: Sequence[WriteId],
) -> list[dict[str, Any]]:
    """The keyword arguments of ``mint_pause`` for each interrupt no pause speaks for; each binds
    its question and the pending writes its run starts from (:mod:`.start`)."""
    if not pending:
        return []
    messages = project_messages(snapshot.values)
    return [
        {
            "thread_id": thread_of(head),
            "checkpoint_id": str(snapshot.config["configurable"]["checkpoint_id"]),
            "scope_hash": scope_of(graph),
            "tool_call_id": interrupt.tool_call_id,
            "interrupt_id": interrupt.interrupt_id,
            "name": interrupt.name,
            "request": interrupt.request,
            "prompt": interrupt.prompt,
            "messages": messages,
            "answer_schema": interrupt.answer_schema,
            "shown": shown_with_start(interrupt.shown, writes),
            "resumable_check": partial(_still_pending, graph, head),
        }
        for interrupt in pending
        if interrupt.interrupt_id not in taken
    ]


def _still_pending(graph: Any, head: RunnableConfig, claims: PauseClaims) -> bool:
    """``resumable`` is earned: the interrupt is pending at the head, read after the saver's writes."""
    return claims.interrupt_id in pending_ids(graph.get_state(head))


# -- continuing ---------------------------------------------------------------------------


def continue_graph(graph: Any, resumed: ResumedPause) -> ContinueResult:
    """Continue the graph from an answered pause, once across all processes.

    ``ran=False`` with a ``reason`` when the pause was minted by another graph (nothing is
    claimed: that graph can still continue it), when it was continued before (a
    redelivery), when the interrupt is no longer pending at the head (nothing else is
    answered in its place), when the graph refuses the answer ("answer refused by the
    graph: ..."), or when the interrupt's question changed since the pause was minted ("the
    question changed since it was asked"; nothing runs); both are listed for operators as
    failed continuations. Any other error propagates
    and the pause shows as stalled. Pauses the run stops at next keep the continued
    pause's graph name.
    """
    head = _Head(graph, _thread_head(resumed.claims))
    with one_head_read(resumed.claims.thread_id):
        return continue_once(resumed, partial(_continue, head), agent=name_of(graph), still_shown=head.shown)


async def acontinue_graph(graph: Any, resumed: ResumedPause) -> ContinueResult:
    """:func:`continue_graph` for async code: ``ainvoke`` on the graph, the same guarantees."""
    head = _Head(graph, _thread_head(resumed.claims))
    with one_head_read(resumed.claims.thread_id):
        return await acontinue_once(
            resumed, partial(_acontinue, head), agent=name_of(graph), still_shown=head.ashown
        )


@dataclass
class _Head:
    """The thread's head as one continuation reads it before the graph runs: read once, by the
    question's check (``still_shown``) or else by the run, and used by both; and the checkpoints
    the head was found to descend from (each pause's own, checked once)."""

    graph: Any
    config: RunnableConfig
    snapshot: Any = None
    writes: list[WriteId] = field(default_factory=list)
    bound: set[str] = field(default_factory=set)

    def read(self) -> Any:
        if self.snapshot is None:
            with writes_read() as seen:
                self.snapshot = self.graph.get_state(self.config)
            self.writes = _writes_at(seen, self.snapshot)
        return self.snapshot

    async def aread(self) -> Any:
        if self.snapshot is None:
            with writes_read() as seen:
                self.snapshot = await self.graph.aget_state(self.config)
            self.writes = _writes_at(seen, self.snapshot)
        return self.snapshot

    def shown(self, member: ResumedPause) -> Any:
        self.require_bound([member])
        return self.shown_now(self.read(), member.claims)

    async def ashown(self, member: ResumedPause) -> Any:
        await self.arequire_bound([member])
        return self.shown_now(await self.aread(), member.claims)

    def shown_now(self, snapshot: Any, claims: PauseClaims) -> Any:
        """What the pause binds as the head holds it now: its question (:func:`_shown_now`) and the
        pending writes the run starts from; a node that would run again is refused by name."""
        question = _shown_now(snapshot, claims)
        checkpoint_id = _checkpoint_of(snapshot.config) or ""
        deleted = deleted_writes(snapshot, self.writes, checkpoint_id, self.graph)
        if deleted is not None:
            raise ContinuationRefused(
                f"thread {claims.thread_id!r} does not start where pause {claims.jti!r} was made: {deleted}"
            )
        return shown_with_start(question, self.writes)

    def siblings_bound_again(
        self, after: Any, writes: list[WriteId], speaking: list[Sibling], members: list[ResumedPause]
    ) -> list[tuple[Sibling, str]]:
        """The pauses still pending at the checkpoint this continuation ran from (``speaking``,
        the members aside), bound again to the writes its run left there (:func:`.start.rebound`).
        Nothing once the run moved the head on: no pause made at that checkpoint is pending there."""
        start = _checkpoint_of(self.snapshot.config)
        if start is None or _checkpoint_of(after.config) != start:
            return []
        ours = {member.claims.jti for member in members}
        siblings = [s for s in speaking if s.checkpoint_id == start and s.jti not in ours]
        questions = {p.interrupt_id: p.shown for p in pending_interrupts(self.snapshot)}
        return rebound(siblings, questions, self.writes, writes)

    def require_bound(self, members: list[ResumedPause]) -> None:
        """``ContinuationRefused`` unless the head is each pause's checkpoint or descends from it."""
        snapshot = self.read()
        for claims in self._unbound(members):
            lineage = _Lineage(snapshot, claims)
            while (parent := lineage.next_parent()) is not None:
                lineage.step(self.graph.checkpointer.get_tuple(parent))
            self.bound.add(claims.checkpoint_id)

    async def arequire_bound(self, members: list[ResumedPause]) -> None:
        snapshot = await self.aread()
        for claims in self._unbound(members):
            lineage = _Lineage(snapshot, claims)
            while (parent := lineage.next_parent()) is not None:
                lineage.step(await self.graph.checkpointer.aget_tuple(parent))
            self.bound.add(claims.checkpoint_id)

    def _unbound(self, members: list[ResumedPause]) -> list[PauseClaims]:
        return [m.claims for m in members if m.claims.checkpoint_id not in self.bound]


class _Lineage:
    """A walk from the head back along parent ids to the checkpoint a pause was made at.

    Checkpoint ids grow along a lineage (LangGraph's are time-ordered), so the walk ends at the
    first id older than the pause's: the head does not descend from it. Each step is a checkpoint
    read through the saver, which checks its row's MAC (its parent id among what it covers)."""

    def __init__(self, snapshot: Any, claims: PauseClaims) -> None:
        self.claims = claims
        self.head = _checkpoint_of(snapshot.config)
        self.at = self.head
        self.parent: RunnableConfig | None = snapshot.parent_config
        if self.head is None:
            raise ContinuationRefused(
                f"thread {claims.thread_id!r} has no checkpoint: checkpoint {claims.checkpoint_id}, "
                f"which pause {claims.jti!r} was made at, is gone; nothing ran"
            )

    def next_parent(self) -> RunnableConfig | None:
        """The next checkpoint to read (None: the head descends from the pause's checkpoint)."""
        start = self.claims.checkpoint_id
        if self.at == start:
            return None
        assert self.at is not None
        if self.at < start:
            raise self._refusal(
                f"its head, checkpoint {self.head}, is older than checkpoint {start}, which pause "
                f"{self.claims.jti!r} was made at: the thread was set back and that checkpoint is gone"
                if self.at == self.head
                else f"its head, checkpoint {self.head}, does not descend from checkpoint {start}, "
                f"which pause {self.claims.jti!r} was made at: it is on another branch"
            )
        if _checkpoint_of(self.parent) is None:
            raise self._refusal(
                f"its head, checkpoint {self.head}, does not descend from checkpoint {start}, which "
                f"pause {self.claims.jti!r} was made at: its lineage ends at checkpoint {self.at}"
            )
        return self.parent

    def step(self, found: Any) -> None:
        if found is None:
            raise self._refusal(
                f"the lineage of its head, checkpoint {self.head}, is broken: checkpoint "
                f"{_checkpoint_of(self.parent)}, the parent of {self.at}, is gone"
            )
        self.at, self.parent = _checkpoint_of(found.config), found.parent_config

    def _refusal(self, what: str) -> ContinuationRefused:
        return ContinuationRefused(
            f"thread {self.claims.thread_id!r} does not start where the pause was made: {what}; nothing ran"
        )


def _checkpoint_of(config: RunnableConfig | None) -> str | None:
    found = ((config or {}).get("configurable") or {}).get("checkpoint_id")
    return str(found) if found else None


def _shown_now(snapshot: Any, claims: PauseClaims) -> Any:
    """What the pending interrupt of ``claims`` asks at the head now (:func:`shown_of`), or the
    refusal ``run`` would give when it is not pending."""
    interrupt_id = _interrupt_of(claims)
    for interrupt in snapshot.interrupts:
        if interrupt.id == interrupt_id:
            return shown_of(interrupt.value, snapshot.values)
    _require_pending(snapshot, {interrupt_id: None}, claims)
    raise AssertionError("unreachable")  # pragma: no cover


def _continue(reading: _Head, continuation: Continuation) -> Any:
    graph = reading.graph
    head, resume = _resume_of(continuation)
    reading.require_bound(continuation.members or [continuation.resumed])
    _require_pending(reading.read(), resume, continuation.resumed.claims)
    try:
        output = graph.invoke(_command(resume), strict(head))
    except Exception as exc:
        refusal = _refusal(exc, continuation.resumed.claims)
        if refusal is None:
            raise
        raise refusal from exc
    if _may_have_stopped(output):
        with writes_read() as seen:
            after = graph.get_state(head)
        writes = _writes_at(seen, after)
        pending = pending_interrupts(after)
        speaking = speaking_pauses(thread_of(head), [p.interrupt_id for p in pending])
        taken = {s.interrupt_id for s in speaking}
        for fields in _mint_fields(graph, head, after, pending, taken, writes):
            continuation.mint_next(**fields)
        members = continuation.members or [continuation.resumed]
        bind_again(reading.siblings_bound_again(after, writes, speaking, members))
    return output


async def _acontinue(reading: _Head, continuation: Continuation) -> Any:
    graph = reading.graph
    head, resume = _resume_of(continuation)
    await reading.arequire_bound(continuation.members or [continuation.resumed])
    _require_pending(await reading.aread(), resume, continuation.resumed.claims)
    try:
        output = await graph.ainvoke(_command(resume), strict(head))
    except Exception as exc:
        refusal = _refusal(exc, continuation.resumed.claims)
        if refusal is None:
            raise
        raise refusal from exc
    if not _may_have_stopped(output):
        return output
    with writes_read() as seen:
        after = await graph.aget_state(head)
    writes = _writes_at(seen, after)
    pending = pending_interrupts(after)
    speaking = await sync_to_async(speaking_pauses, thread_sensitive=True)(
        thread_of(head), [p.interrupt_id for p in pending]
    )
    taken = {s.interrupt_id for s in speaking}
    for fields in _mint_fields(graph, head, after, pending, taken, writes):
        await continuation.amint_next(**fields)
    members = continuation.members or [continuation.resumed]
    rebinding = reading.siblings_bound_again(after, writes, speaking, members)
    await sync_to_async(bind_again, thread_sensitive=True)(rebinding)
    return output


def _may_have_stopped(output: Any) -> bool:
    """Whether the run may have stopped at interrupts, so the head is read for them. LangGraph's
    ``invoke`` returns the state's values with the interrupts it stopped at under
    ``__interrupt__``: values without that key ended the run, and the head it wrote last is not
    read again. Any other output (another stream mode) is read from the head."""
    return not isinstance(output, dict) or INTERRUPTED in output


def _resume_of(continuation: Continuation) -> tuple[RunnableConfig, dict[str, Any]]:
    """The thread's head, and the answer of every pause this continuation carries, by interrupt id."""
    resume: dict[str, Any] = {}
    for member in continuation.members or [continuation.resumed]:
        resume[_interrupt_of(member.claims)] = member.answer
    return _thread_head(continuation.resumed.claims), resume


def _thread_head(claims: PauseClaims) -> RunnableConfig:
    return head_config({"configurable": {"thread_id": claims.thread_id}})


def _interrupt_of(claims: PauseClaims) -> str:
    if not claims.interrupt_id:
        raise ContinuationRefused(
            f"pause {claims.jti!r} names no LangGraph interrupt: it was not minted by pause_interrupts"
        )
    return claims.interrupt_id


def _require_pending(snapshot: Any, resume: dict[str, Any], claims: PauseClaims) -> None:
    gone = sorted(set(resume) - pending_ids(snapshot))
    if gone:
        raise ContinuationRefused(
            f"interrupt {', '.join(gone)} is no longer pending at the head of thread {claims.thread_id!r}: "
            f"{_head_holds(snapshot, claims.thread_id)}; nothing else was answered"
        )


def _head_holds(snapshot: Any, thread_id: str) -> str:
    """What the head was found to hold, said as found."""
    checkpoint_id = ((snapshot.config or {}).get("configurable") or {}).get("checkpoint_id")
    if not checkpoint_id:
        return f"thread {thread_id!r} has no checkpoint"
    waiting = sorted(pending_ids(snapshot))
    return f"its head, checkpoint {checkpoint_id}, waits on " + (
        f"interrupt {', '.join(waiting)}" if waiting else "no interrupt"
    )


def _command(resume: dict[str, Any]) -> Any:
    from langgraph.types import Command

    return Command(resume=resume)


def _refusal(error: Exception, claims: PauseClaims) -> ContinuationRefused | None:
    """A refusal by LangGraph as ``ContinuationRefused``; None for any other error (it propagates)."""
    unknown = unknown_interrupt_error()
    if unknown is not None and isinstance(error, unknown):
        return ContinuationRefused(
            f"interrupt {claims.interrupt_id} is no longer pending at the head of thread "
            f"{claims.thread_id!r}: {error}; nothing else was answered"
        )
    if is_refused_answer(error):
        return ContinuationRefused(f"answer refused by the graph: {error}")
    return None
