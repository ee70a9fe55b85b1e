"""The pending writes a LangGraph run starts from, bound to its pauses.

When parallel nodes share a superstep and one of them interrupts, the nodes that finished keep
their output as *pending writes* of the interrupt's checkpoint; LangGraph reads a node with
output writes as finished and runs every other one again when the run continues. Each write row
carries a MAC, but a deleted row leaves nothing to check: the node it belonged to would run a
second time (a payment made twice). So a pause's ``shown`` also holds the *start* of its run:
how many pending writes its checkpoint held when the pause was bound, and one digest of their
identities (task id, index, channel; the values have MACs of their own). The core keeps a MAC of
``shown`` keyed from ``SECRET_KEY``, so the start cannot be recomputed by someone who edits the
store; the continuation computes it again from the writes the head read returned, and any
difference refuses it before the graph runs.

A continuation of parallel interrupts answers one of them and leaves the others pending at the
same checkpoint, with the answered node's writes added to it. Those writes are this app's own,
made holding the thread's turn after the start was verified, so the continuation binds the
pauses still pending there again to the writes as its run left them (:func:`rebound`), each only
when its MAC still verifies against the start the continuation verified.

A run starts from the interrupt's own checkpoint: LangGraph makes an interrupt's id from its
task's, and a task's from the checkpoint's id and step, so an interrupt pending at a later head is
not the pause's (that continuation is refused as "no longer pending" before the writes are
compared). The writes of a later head are compared all the same, and differ.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from turnstate_app.contrib.langgraph.ledger import Sibling
from turnstate_app.contrib.langgraph.saver import WriteId
from turnstate_app.pauses.binding import identity_of, shown_mac, shown_verifies
from turnstate_app.pauses.shown import shown_digest

UNBOUND_CHANNELS = frozenset({"__resume__", "__error__", "__error_source_node__"})
"""LangGraph's records of an answer given and of a node that failed: a continuation that fails
after its answer leaves both behind, and the same pause, handed over again, must still run. Every
other write is bound: a node's output (LangGraph reads a node with one as finished) and the
question it asked (``__interrupt__``)."""


def start_of(writes: Sequence[WriteId]) -> dict[str, Any]:
    """The start a pause binds: the number of the checkpoint's pending writes (those of
    :data:`UNBOUND_CHANNELS` aside) and one digest of their identities, in a fixed order."""
    ordered = sorted(write for write in writes if write[2] not in UNBOUND_CHANNELS)
    return {"writes": len(ordered), "digest": shown_digest([list(write) for write in ordered])}


def shown_with_start(question: Any, writes: Sequence[WriteId]) -> dict[str, Any]:
    """What a LangGraph pause's keyed digest covers: the question (:func:`.interrupts.shown_of`)
    and the start of the run (:func:`start_of`)."""
    return {"question": question, "start": start_of(writes)}


def deleted_writes(snapshot: Any, writes: Sequence[WriteId], checkpoint_id: str, graph: Any) -> str | None:
    """Why the run would repeat a node that finished before the pause (None: no such node).

    A task of the checkpoint with no pending write at all is run again when the run continues;
    at a pause every task of the step has run (finished, asked, or failed), so such a task lost its
    writes. A node that reads its result from LangGraph's cache records none and is not named."""
    holding = {write[0] for write in writes}
    lost = [task for task in snapshot.tasks if task.id not in holding and not _cached(graph, task.name)]
    if not lost:
        return None
    names = ", ".join(f"{task.name!r} (task {task.id})" for task in lost)
    node = "node" if len(lost) == 1 else "nodes"
    return (
        f"the pending writes of checkpoint {checkpoint_id} were deleted since the pause was made: {node} "
        f"{names} finished before it and would run again; nothing ran"
    )


def _cached(graph: Any, name: str) -> bool:
    node = (getattr(graph, "nodes", None) or {}).get(name)
    return getattr(node, "cache_policy", None) is not None


def rebound(
    siblings: Iterable[Sibling],
    questions: dict[str, Any],
    before: Sequence[WriteId],
    after: Sequence[WriteId],
) -> list[tuple[Sibling, str]]:
    """Each pause of ``siblings`` whose MAC verifies against its question (``questions``, by
    interrupt id, as read at the start) and the writes ``before`` the run, with its new MAC over the
    same question and the writes ``after`` it. A pause that does not verify keeps its MAC (it is
    refused when continued)."""
    found = []
    for sibling in siblings:
        if sibling.interrupt_id not in questions:
            continue
        question = questions[sibling.interrupt_id]
        identity = identity_of(sibling)
        if not shown_verifies(sibling.recorded, identity, shown_digest(shown_with_start(question, before))):
            continue
        found.append((sibling, shown_mac(identity, shown_digest(shown_with_start(question, after)))))
    return found
