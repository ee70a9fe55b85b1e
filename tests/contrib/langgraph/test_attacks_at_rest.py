"""A LangGraph continuation holds against someone who can write the database but holds no key.

The graph asks to approve a payment and then pays the amount its state holds. Between the
answer and the continuation an attacker with ORM write access, and neither ``SECRET_KEY`` nor
the encryption keys, edits what the saver stored: the amount in the head checkpoint (written
back clear, key id NULL), the answer, the MAC itself, or the thread's lineage. Each attack is
refused — ``ran=False``, the pause ``refused`` with a reason, nothing paid — and each test
patches its check out and shows that the edited state then *is* run (9999 paid), so it can
fail. Honest runs, parallel interrupts on a moving head, ``copy_thread`` and the migration
that keys the rows written before still work.

Two more need no key at all: deleting the pending write of a node that finished beside the
question (it would pay again on resume), and moving the checkpoint's ``step`` in its metadata
(LangGraph's task ids are made from it). Both are refused; patched out, both pay twice.
"""

from __future__ import annotations

import json
import operator
import uuid
from collections.abc import Iterator
from typing import Annotated, Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import override_settings
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from typing_extensions import TypedDict

from tests.contrib.langgraph.approvals import config, start, trip_approvals
from tests.contrib.raw_edits import raw_update
from tests.encryption_support import KEY_A
from turnstate_app import integrity as core_integrity
from turnstate_app.choices import ContinuationState
from turnstate_app.contrib.langgraph import (
    DjangoCheckpointSaver,
    UnreadableCheckpointError,
    acontinue_graph,
    apause_interrupts,
    bridge,
    continue_graph,
    pause_interrupts,
    strict,
)
from turnstate_app.contrib.langgraph import integrity as rows_integrity
from turnstate_app.contrib.langgraph.models import Checkpoint, CheckpointWrite
from turnstate_app.encryption import unseal
from turnstate_app.errors import PayloadBindingError
from turnstate_app.keys import answer_key
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pauses import ContinueResult, aresume_pause, handoff, resume_pause, resumed
from turnstate_app.pauses import continuation as continuing

pytestmark = pytest.mark.django_db(transaction=True)

ASKED = 10
FORGED = 9999
PAID: list[tuple[str, int]] = []
"""(thread, amount) of every payment the graph made (its nodes run on LangGraph's threads)."""
UNREADABLE = "cannot be read"


class PaymentState(TypedDict, total=False):
    amount: int
    log: Annotated[list[str], operator.add]


def _charge(state: PaymentState, config: RunnableConfig) -> dict[str, Any]:
    PAID.append((config["configurable"]["thread_id"], state["amount"]))
    return {"log": [f"charged {state['amount']}"]}


def _approve(state: PaymentState, config: RunnableConfig) -> dict[str, Any]:
    answer = interrupt({"question": "Approve the payment?", "amount": state["amount"]})
    if answer != "approve":
        return {"log": ["rejected"]}
    PAID.append((config["configurable"]["thread_id"], state["amount"]))
    return {"log": [f"paid {state['amount']}"]}


def payment_graph(saver: DjangoCheckpointSaver) -> Any:
    """``approve`` asks, then pays the state's amount."""
    builder = StateGraph(PaymentState)
    builder.add_node("approve", _approve)
    builder.add_edge(START, "approve")
    builder.add_edge("approve", END)
    return builder.compile(checkpointer=saver, name="payment")


def charge_then_confirm(saver: DjangoCheckpointSaver) -> Any:
    """``charge`` pays, then ``confirm`` asks: a thread set back before the charge would pay again."""
    builder = StateGraph(PaymentState)
    builder.add_node("charge", _charge)
    builder.add_node("confirm", lambda state: {"log": [f"confirmed {interrupt('Ship it?')}"]})
    builder.add_edge(START, "charge")
    builder.add_edge("charge", "confirm")
    builder.add_edge("confirm", END)
    return builder.compile(checkpointer=saver, name="charge-then-confirm")


@pytest.fixture(autouse=True)
def _no_payments() -> Iterator[None]:
    PAID.clear()
    yield
    PAID.clear()


def paid(thread: str) -> list[int]:
    return [amount for where, amount in PAID if where == thread]


def paused(graph: Any = None, answer: str = "approve") -> tuple[Any, str, Any, Any]:
    """A new thread stopped at its question, the pause minted there, and its answer given."""
    graph = graph or payment_graph(DjangoCheckpointSaver())
    thread = f"attack-{uuid.uuid4().hex[:12]}"
    graph.invoke({"amount": ASKED, "log": []}, config(thread))
    [minted] = pause_interrupts(graph, config(thread), run_id="r", session_id="s")
    return graph, thread, minted, resume_pause(minted.token, answer)


def head_row(thread: str) -> Checkpoint:
    head = Checkpoint.objects.filter(thread_id=thread, checkpoint_ns="").order_by("-checkpoint_id").first()
    assert head is not None
    return head


def forged_body(thread: str) -> tuple[str, bytes]:
    """The head's body with the amount raised, serialized clear: what the attacker writes.

    Under keys the test reads the plaintext with the app's key, as an attacker who knows the
    state's shape could rebuild it; what matters is what they can write back."""
    serde = DjangoCheckpointSaver().serde
    head = head_row(thread)
    data = unseal(bytes(head.checkpoint), head.encryption_key_id, thread_id=thread)
    body = serde.loads_typed((head.type, data))
    kind, value = body["channel_values"]["amount"]
    assert serde.loads_typed((kind, bytes(value))) == ASKED
    body["channel_values"]["amount"] = list(serde.dumps_typed(FORGED))
    type_, forged = serde.dumps_typed(body)
    return type_, forged


def write_back_clear(thread: str, mac: str | None | object = ...) -> None:
    """The head's body replaced by the forged one, clear (key id NULL); its MAC left as it was
    unless ``mac`` is given."""
    head = head_row(thread)
    type_, forged = forged_body(thread)
    raw_update(Checkpoint, head.pk, "type", type_)
    raw_update(Checkpoint, head.pk, "checkpoint", forged)
    raw_update(Checkpoint, head.pk, "encryption_key_id", None)
    if mac is not ...:
        raw_update(Checkpoint, head.pk, "value_mac", mac)


def guessed_mac(thread: str) -> str:
    """The head row's MAC as the attacker can compute it: the right message, a guessed key."""
    head = head_row(thread)
    identity = [getattr(head, name) for name in rows_integrity.CHECKPOINT.identity]
    with override_settings(SECRET_KEY="django-insecure-guessed"):
        return rows_integrity.mac(rows_integrity.CHECKPOINT, identity, None, bytes(head.checkpoint))


def assert_refused(result: Any, thread: str, jti: str, *words: str) -> None:
    assert not result.ran and result.reason, result
    for word in words:
        assert word in result.reason, result.reason
    pause = Pause.objects.get(jti=jti)
    assert (pause.continuation, pause.continuation_reason) == (ContinuationState.REFUSED, result.reason)
    assert paid(thread) == []


def rows_verify_anything(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every row's MAC check patched out."""
    monkeypatch.setattr(core_integrity, "row_verifies", lambda *args: True)


# -- (a) the amount edited in the head checkpoint, written back clear ---------------------------


@pytest.fixture(params=["clear", "encrypted"])
def keys(request: pytest.FixtureRequest, turnstate_settings: dict[str, Any]) -> str:
    """Values stored clear, or encrypted at rest (the attacker holds neither key)."""
    if request.param == "encrypted":
        turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    return str(request.param)


def test_a_raised_amount_written_back_clear_is_refused_and_nothing_is_paid(keys: str) -> None:
    graph, thread, minted, answered = paused()
    assert (head_row(thread).encryption_key_id is None) == (keys == "clear")
    write_back_clear(thread)

    result = continue_graph(graph, answered)

    assert_refused(result, thread, minted.claims.jti, UNREADABLE, "does not match its MAC")


def test_a_raised_amount_written_back_clear_is_paid_when_the_check_is_patched_out(
    keys: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows_verify_anything(monkeypatch)
    graph, thread, _, answered = paused()
    write_back_clear(thread)

    assert continue_graph(graph, answered).ran
    assert paid(thread) == [FORGED]


def test_the_saver_itself_refuses_the_edited_checkpoint_in_get_tuple_and_list() -> None:
    graph, thread, _, _ = paused()
    write_back_clear(thread)
    saver = graph.checkpointer

    with pytest.raises(UnreadableCheckpointError, match="does not match its MAC") as caught:
        saver.get_tuple(config(thread))
    assert isinstance(caught.value, PayloadBindingError)
    with pytest.raises(UnreadableCheckpointError):
        list(saver.list(config(thread)))
    assert str(FORGED) not in str(caught.value)


async def test_the_async_twin_refuses_the_edited_checkpoint_too() -> None:
    from asgiref.sync import sync_to_async

    graph = payment_graph(DjangoCheckpointSaver())
    thread = f"attack-{uuid.uuid4().hex[:12]}"
    await graph.ainvoke({"amount": ASKED, "log": []}, config(thread))
    [minted] = await apause_interrupts(graph, config(thread), run_id="r", session_id="s")
    answered = await aresume_pause(minted.token, "approve")
    await sync_to_async(write_back_clear)(thread)

    result = await acontinue_graph(graph, answered)

    assert not result.ran and result.reason and UNREADABLE in result.reason
    assert paid(thread) == []


# -- (b) the answer swapped ------------------------------------------------------------------------


def swap_answer(claims: Any, answer: str) -> None:
    """The stored ``answer:<jti>`` row rewritten, as the store keeps it (JSON)."""
    row = CheckpointMetadata.objects.get(
        thread_id=claims.thread_id, checkpoint_id=claims.checkpoint_id, key=answer_key(claims)
    )
    raw_update(CheckpointMetadata, row.pk, "value", '"' + answer + '"')


def continued_from_the_store(graph: Any, jti: str) -> Any:
    """What a worker does with a jti: the answered pause rebuilt from the database, continued.
    A stored answer that fails its MAC may be refused by the rebuild itself (nothing is claimed)."""
    try:
        again = resumed(jti)
    except PayloadBindingError as unreadable:
        return ContinueResult(ran=False, reason=str(unreadable))
    return continue_graph(graph, again)


def test_a_rejection_swapped_for_an_approval_is_refused_and_nothing_is_paid() -> None:
    graph, thread, minted, _ = paused(answer="reject")
    swap_answer(minted.claims, "approve")

    result = continued_from_the_store(graph, minted.claims.jti)

    assert not result.ran and result.reason and paid(thread) == []
    assert Pause.objects.get(jti=minted.claims.jti).continuation != ContinuationState.CONTINUED


def test_a_swapped_answer_is_paid_when_the_checks_are_patched_out(monkeypatch: pytest.MonkeyPatch) -> None:
    rows_verify_anything(monkeypatch)
    monkeypatch.setattr(handoff, "answer_verifies", lambda *args: True)
    graph, thread, minted, _ = paused(answer="reject")
    swap_answer(minted.claims, "approve")

    assert continued_from_the_store(graph, minted.claims.jti).ran
    assert paid(thread) == [ASKED]


# -- (c) the MAC removed, (d) recomputed under a guessed key, (e) a clear row planted under keys ----


FORGERIES = ["mac removed", "mac under a guessed key"]


def forge(thread: str, forgery: str) -> None:
    write_back_clear(thread, mac=None)
    if forgery == "mac under a guessed key":
        raw_update(Checkpoint, head_row(thread).pk, "value_mac", guessed_mac(thread))


@pytest.mark.parametrize("forgery", FORGERIES)
def test_an_edited_checkpoint_with_its_mac_removed_or_forged_is_refused(forgery: str) -> None:
    graph, thread, minted, answered = paused()
    forge(thread, forgery)

    result = continue_graph(graph, answered)

    missing = "has no MAC" if forgery == "mac removed" else "does not match its MAC"
    assert_refused(result, thread, minted.claims.jti, UNREADABLE, missing)


@pytest.mark.parametrize("forgery", FORGERIES)
def test_an_edited_checkpoint_with_its_mac_removed_or_forged_is_paid_when_the_check_is_patched_out(
    forgery: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows_verify_anything(monkeypatch)
    graph, thread, _, answered = paused()
    forge(thread, forgery)

    assert continue_graph(graph, answered).ran and paid(thread) == [FORGED]


def plant_clear_head(thread: str, mac: str | None) -> None:
    """The sealed head row deleted and a clear one of the attacker's making inserted in its place."""
    head = head_row(thread)
    type_, forged = forged_body(thread)
    fields = {
        f.attname: getattr(head, f.attname) for f in Checkpoint._meta.concrete_fields if not f.primary_key
    }
    head.delete()
    Checkpoint.objects.create(
        **{**fields, "type": type_, "checkpoint": forged, "encryption_key_id": None, "value_mac": mac}
    )


@pytest.mark.parametrize("mac", ["none", "guessed"])
def test_a_clear_checkpoint_planted_under_keys_is_refused(
    mac: str, turnstate_settings: dict[str, Any]
) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    graph, thread, minted, answered = paused()
    assert head_row(thread).encryption_key_id is not None
    plant_clear_head(thread, None)
    if mac == "guessed":
        raw_update(Checkpoint, head_row(thread).pk, "value_mac", guessed_mac(thread))

    result = continue_graph(graph, answered)

    assert_refused(result, thread, minted.claims.jti, UNREADABLE)


def test_a_clear_checkpoint_planted_under_keys_is_paid_when_the_check_is_patched_out(
    turnstate_settings: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    rows_verify_anything(monkeypatch)
    graph, thread, _, answered = paused()
    plant_clear_head(thread, None)

    assert continue_graph(graph, answered).ran and paid(thread) == [FORGED]


def test_a_pending_write_or_value_row_edited_without_the_key_is_unreadable() -> None:
    """The interrupt's own row (a pending write) is covered the same way as the checkpoint."""
    graph, thread, minted, answered = paused()
    write = CheckpointWrite.objects.get(thread_id=thread, channel="__interrupt__")
    raw_update(CheckpointWrite, write.pk, "task_path", "elsewhere")  # an identity column: the MAC fails too

    result = continue_graph(graph, answered)

    assert_refused(result, thread, minted.claims.jti, UNREADABLE, "write ")


# -- (f) the thread set back: the interrupt's checkpoint and the later ones deleted -----------------


def set_back(thread: str, before: str) -> None:
    """``thread`` as it was before the charge: every checkpoint from ``before`` on deleted with
    its writes, and the writes the charge recorded at the checkpoint left as the head."""
    CheckpointWrite.objects.filter(thread_id=thread, checkpoint_id__gte=before).delete()
    Checkpoint.objects.filter(thread_id=thread, checkpoint_id__gte=before).delete()
    CheckpointWrite.objects.filter(thread_id=thread, checkpoint_id=head_row(thread).checkpoint_id).delete()


def test_a_thread_set_back_before_its_pause_is_refused_naming_what_changed() -> None:
    graph, thread, minted, answered = paused(charge_then_confirm(DjangoCheckpointSaver()))
    assert paid(thread) == [ASKED]
    set_back(thread, minted.claims.checkpoint_id)
    head = head_row(thread).checkpoint_id

    result = continue_graph(graph, answered)

    assert_refused_after_charge(result, thread, minted.claims.jti)
    assert f"its head, checkpoint {head}, is older than checkpoint {minted.claims.checkpoint_id}" in str(
        result.reason
    )
    assert "set back" in str(result.reason)


def assert_refused_after_charge(result: Any, thread: str, jti: str) -> None:
    assert not result.ran and result.reason
    assert Pause.objects.get(jti=jti).continuation == ContinuationState.REFUSED
    assert paid(thread) == [ASKED]  # the one charge made before the pause, not another


def test_a_thread_set_back_charges_again_when_the_start_state_checks_are_patched_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """LangGraph's interrupt ids are made from their checkpoint's id, so the interrupt's own checks
    (pending at the head, the question's MAC, strict resume) refuse this too; with all of them
    patched out as well as the lineage's, the rollback pays twice."""
    monkeypatch.setattr(bridge._Head, "require_bound", lambda self, members: None)
    monkeypatch.setattr(bridge, "_shown_now", lambda snapshot, claims: None)
    monkeypatch.setattr(bridge, "deleted_writes", lambda *args: None)  # the set-back head's task has none
    monkeypatch.setattr(continuing, "shown_verifies", lambda *args: True)
    monkeypatch.setattr(bridge, "_require_pending", lambda *args: None)
    monkeypatch.setattr(strict, "strict_resume_key", lambda: None)
    graph, thread, minted, answered = paused(charge_then_confirm(DjangoCheckpointSaver()))
    set_back(thread, minted.claims.checkpoint_id)

    result = continue_graph(graph, answered)

    assert result.ran and paid(thread) == [ASKED, ASKED]


async def test_the_async_twin_refuses_a_broken_lineage_too() -> None:
    from asgiref.sync import sync_to_async

    graph, thread, minted, answered = await sync_to_async(paused)()
    first, _second = await sync_to_async(later_heads)(graph, thread, 2)
    await Checkpoint.objects.filter(thread_id=thread, checkpoint_id=first).adelete()

    result = await acontinue_graph(graph, answered)

    assert not result.ran and "broken" in str(result.reason) and f"checkpoint {first}" in str(result.reason)
    assert paid(thread) == []


def test_a_head_on_another_branch_is_refused_naming_it() -> None:
    graph, thread, minted, answered = paused(charge_then_confirm(DjangoCheckpointSaver()))
    history = list(graph.get_state_history(config(thread)))
    before = next(s for s in history if s.next == ("charge",))
    graph.update_state(before.config, {"log": ["forked"]})  # a later head, on a branch of its own

    result = continue_graph(graph, answered)

    assert_refused_after_charge(result, thread, minted.claims.jti)
    assert "does not descend from checkpoint" in str(result.reason) and "another branch" in str(result.reason)


def test_parallel_interrupts_continue_one_by_one() -> None:
    graph = trip_approvals(DjangoCheckpointSaver())
    thread = f"pair-{uuid.uuid4().hex[:12]}"
    start(graph, thread)
    minted = {m.claims.name: m for m in pause_interrupts(graph, config(thread), run_id="r", session_id="s")}
    assert minted["flights"].claims.checkpoint_id == minted["hotel"].claims.checkpoint_id

    assert continue_graph(graph, resume_pause(minted["flights"].token, {"approved": True})).ran
    second = continue_graph(graph, resume_pause(minted["hotel"].token, {"approved": True}))

    assert second.ran and [m.claims.name for m in second.minted] == ["details"]


def later_heads(graph: Any, thread: str, count: int) -> list[str]:
    """``count`` checkpoints written on top of the head, each the parent of the next (their ids)."""
    made = []
    for step in range(count):
        written = graph.update_state(config(thread), {"log": [f"note {step}"]})
        made.append(written["configurable"]["checkpoint_id"])
    return made


def test_a_head_that_descends_from_the_pauses_checkpoint_passes_the_lineage_check() -> None:
    """Written on top of the pause's checkpoint (here by hand, so the interrupt is no longer pending:
    the continuation is refused for that, and says so, not for its start state)."""
    graph, thread, minted, answered = paused()
    later_heads(graph, thread, 3)

    result = continue_graph(graph, answered)

    assert not result.ran and "no longer pending" in str(result.reason)
    assert "does not start where" not in str(result.reason)


def test_a_lineage_with_a_checkpoint_deleted_is_refused_naming_it() -> None:
    graph, thread, minted, answered = paused()
    first, _second = later_heads(graph, thread, 2)
    Checkpoint.objects.filter(thread_id=thread, checkpoint_id=first).delete()

    result = continue_graph(graph, answered)

    assert_refused(result, thread, minted.claims.jti, "does not start where the pause was made", "broken")
    assert f"checkpoint {first}" in str(result.reason)


def test_a_lineage_check_patched_out_lets_the_broken_lineage_through(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bridge._Head, "require_bound", lambda self, members: None)
    graph, thread, minted, answered = paused()
    first, _second = later_heads(graph, thread, 2)
    Checkpoint.objects.filter(thread_id=thread, checkpoint_id=first).delete()

    result = continue_graph(graph, answered)

    assert "broken" not in str(result.reason)


# -- rows that stay readable --------------------------------------------------------------------------


def test_copy_thread_gives_the_copy_macs_of_its_own_and_keeps_an_unverified_row_unreadable() -> None:
    graph, thread, _, _ = paused()
    saver = graph.checkpointer
    target = f"{thread}-copy"
    saver.copy_thread(thread, target)
    assert saver.get_tuple(config(target)) is not None

    write_back_clear(thread)
    saver.copy_thread(thread, f"{thread}-bad")
    with pytest.raises(UnreadableCheckpointError, match="has no MAC"):
        saver.get_tuple(config(f"{thread}-bad"))


def test_a_mac_made_under_a_key_now_in_the_fallbacks_still_verifies() -> None:
    with override_settings(SECRET_KEY="turnstate-old-key", SECRET_KEY_FALLBACKS=[]):
        graph, thread, _, answered = paused()
    with override_settings(SECRET_KEY="turnstate-new-key", SECRET_KEY_FALLBACKS=["turnstate-old-key"]):
        assert continue_graph(graph, answered).ran
    assert paid(thread) == [ASKED]


APP = "turnstate_langgraph"


def latest() -> None:
    """Every migration of the saver's app applied again."""
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes(APP))


def test_0005_keys_the_rows_written_before_so_they_stay_readable(turnstate_settings: dict[str, Any]) -> None:
    """Rows written clear and sealed, their MAC column dropped and added again by the migration."""
    clear_graph, clear_thread, _, clear_answer = paused()
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    sealed_graph, sealed_thread, _, sealed_answer = paused()
    assert head_row(sealed_thread).encryption_key_id is not None
    executor = MigrationExecutor(connection)
    try:
        executor.migrate([(APP, "0004_encryption_key_id")])
    finally:
        latest()
    assert not Checkpoint.objects.filter(value_mac__isnull=True).exists()
    assert not CheckpointWrite.objects.filter(value_mac__isnull=True).exists()

    assert continue_graph(clear_graph, clear_answer).ran
    assert continue_graph(sealed_graph, sealed_answer).ran
    assert paid(clear_thread) == [ASKED] and paid(sealed_thread) == [ASKED]


# -- (g) a finished node's pending write deleted: the node would run again ----------------------------


def _pay_now(state: PaymentState, config: RunnableConfig) -> dict[str, Any]:
    PAID.append((config["configurable"]["thread_id"], state["amount"]))
    return {"log": [f"paid {state['amount']}"]}


def _ship(state: PaymentState) -> dict[str, Any]:
    return {"log": [f"shipping {interrupt('Ship it?')}"]}


def pay_beside_a_question(saver: DjangoCheckpointSaver) -> Any:
    """``pay`` and ``ship`` in one superstep: ``pay`` pays and finishes, ``ship`` asks. ``pay``'s
    output waits as a pending write of the interrupt's checkpoint."""
    builder = StateGraph(PaymentState)
    builder.add_node("pay", _pay_now)
    builder.add_node("ship", _ship)
    builder.add_edge(START, "pay")
    builder.add_edge(START, "ship")
    builder.add_edge(["pay", "ship"], END)
    return builder.compile(checkpointer=saver, name="pay-beside-a-question")


def delete_outputs(thread: str, checkpoint_id: str, *, only_one: bool = False) -> int:
    """The output writes (not LangGraph's control writes) pending at ``checkpoint_id``, deleted with
    the ORM: no key is needed for that."""
    outputs = CheckpointWrite.objects.filter(thread_id=thread, checkpoint_id=checkpoint_id).exclude(
        channel__startswith="__"
    )
    if only_one:
        outputs = outputs.filter(pk=outputs.order_by("pk").values("pk")[:1])
    deleted, _ = outputs.delete()
    assert deleted >= 1
    return deleted


def start_checks_patched_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pending writes bound to a pause, and the check of a node that would run again, patched
    out (what a pause binds is then its question alone, at mint and at continuation alike)."""
    monkeypatch.setattr(bridge, "deleted_writes", lambda *args: None)
    monkeypatch.setattr(bridge, "shown_with_start", lambda question, writes: question)


def test_a_deleted_pending_write_of_a_finished_node_is_refused_and_it_does_not_pay_again() -> None:
    graph, thread, minted, answered = paused(pay_beside_a_question(DjangoCheckpointSaver()))
    assert paid(thread) == [ASKED]
    checkpoint = minted.claims.checkpoint_id
    delete_outputs(thread, checkpoint)

    result = continue_graph(graph, answered)

    assert_refused_after_charge(result, thread, minted.claims.jti)
    assert f"the pending writes of checkpoint {checkpoint} were deleted" in str(result.reason)
    assert "'pay'" in str(result.reason) and "would run again" in str(result.reason)


def test_a_deleted_pending_write_pays_twice_when_the_check_is_patched_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    start_checks_patched_out(monkeypatch)
    graph, thread, minted, answered = paused(pay_beside_a_question(DjangoCheckpointSaver()))
    delete_outputs(thread, minted.claims.checkpoint_id)

    result = continue_graph(graph, answered)

    assert result.ran and paid(thread) == [ASKED, ASKED]


async def test_the_async_twin_refuses_a_deleted_pending_write_too() -> None:
    from asgiref.sync import sync_to_async

    graph = pay_beside_a_question(DjangoCheckpointSaver())
    thread = f"attack-{uuid.uuid4().hex[:12]}"
    await graph.ainvoke({"amount": ASKED, "log": []}, config(thread))
    [minted] = await apause_interrupts(graph, config(thread), run_id="r", session_id="s")
    answered = await aresume_pause(minted.token, "approve")
    await sync_to_async(delete_outputs)(thread, minted.claims.checkpoint_id)

    result = await acontinue_graph(graph, answered)

    assert not result.ran and "were deleted" in str(result.reason)
    assert paid(thread) == [ASKED]


def _pay_and_note(state: PaymentState, config: RunnableConfig) -> dict[str, Any]:
    PAID.append((config["configurable"]["thread_id"], state["amount"]))
    return {"log": [f"paid {state['amount']}"], "amount": state["amount"]}


def pay_with_two_outputs(saver: DjangoCheckpointSaver) -> Any:
    builder = StateGraph(PaymentState)
    builder.add_node("pay", _pay_and_note)
    builder.add_node("ship", _ship)
    builder.add_edge(START, "pay")
    builder.add_edge(START, "ship")
    builder.add_edge(["pay", "ship"], END)
    return builder.compile(checkpointer=saver, name="pay-with-two-outputs")


def test_one_of_a_nodes_pending_writes_deleted_is_refused_by_the_bound_digest() -> None:
    """The node keeps an output write, so LangGraph would not run it again; the state it starts
    from is still not the one the pause was made on."""
    graph, thread, minted, answered = paused(pay_with_two_outputs(DjangoCheckpointSaver()))
    delete_outputs(thread, minted.claims.checkpoint_id, only_one=True)

    result = continue_graph(graph, answered)

    assert_refused_after_charge(result, thread, minted.claims.jti)


def _approve_named(name: str) -> Any:
    def node(state: PaymentState, config: RunnableConfig) -> dict[str, Any]:
        if interrupt({"question": f"Approve {name}?"}) != "approve":
            return {"log": [f"{name} rejected"]}
        PAID.append((config["configurable"]["thread_id"], state["amount"]))
        return {"log": [f"{name} paid"]}

    return node


def two_approvals(saver: DjangoCheckpointSaver) -> Any:
    """``first`` and ``second`` ask in one superstep; each pays once approved."""
    builder = StateGraph(PaymentState)
    builder.add_node("first", _approve_named("first"))
    builder.add_node("second", _approve_named("second"))
    builder.add_edge(START, "first")
    builder.add_edge(START, "second")
    builder.add_edge(["first", "second"], END)
    return builder.compile(checkpointer=saver, name="two-approvals")


def first_continued(graph: Any) -> tuple[str, Any, Any]:
    """Both pauses minted, the first answered and continued (it pays once); the second answered."""
    thread = f"attack-{uuid.uuid4().hex[:12]}"
    graph.invoke({"amount": ASKED, "log": []}, config(thread))
    minted = {m.claims.name: m for m in pause_interrupts(graph, config(thread), run_id="r", session_id="s")}
    assert continue_graph(graph, resume_pause(minted["first"].token, "approve")).ran
    assert paid(thread) == [ASKED]
    return thread, minted["second"], resume_pause(minted["second"].token, "approve")


def test_parallel_pauses_continued_one_by_one_each_pay_once() -> None:
    graph = two_approvals(DjangoCheckpointSaver())
    thread, second, answered = first_continued(graph)

    assert continue_graph(graph, answered).ran
    assert paid(thread) == [ASKED, ASKED]  # first's payment and second's, each once


def test_the_answered_nodes_writes_deleted_before_the_next_continuation_are_refused() -> None:
    """The first continuation binds the second pause again to the writes its run left."""
    graph = two_approvals(DjangoCheckpointSaver())
    thread, second, answered = first_continued(graph)
    delete_outputs(thread, second.claims.checkpoint_id)

    result = continue_graph(graph, answered)

    assert not result.ran and result.reason
    assert Pause.objects.get(jti=second.claims.jti).continuation == ContinuationState.REFUSED
    assert paid(thread) == [ASKED]


def test_the_answered_nodes_writes_deleted_pay_again_when_the_check_is_patched_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    start_checks_patched_out(monkeypatch)
    graph = two_approvals(DjangoCheckpointSaver())
    thread, second, answered = first_continued(graph)
    delete_outputs(thread, second.claims.checkpoint_id)

    assert continue_graph(graph, answered).ran
    assert paid(thread) == [ASKED, ASKED, ASKED]  # first paid again, then second


def test_0006_binds_the_pauses_not_yet_continued_to_their_start_and_back() -> None:
    """Keyed as the earlier build reads them (the question alone), then again to their start."""
    from turnstate_app.contrib.langgraph.start import shown_with_start
    from turnstate_app.pauses.binding import identity_of, shown_mac
    from turnstate_app.pauses.shown import shown_digest

    graph, thread, minted, answered = paused(pay_beside_a_question(DjangoCheckpointSaver()))
    identity = identity_of(minted.claims)
    question = "Ship it?"
    writes = list(
        CheckpointWrite.objects.filter(
            thread_id=thread, checkpoint_id=minted.claims.checkpoint_id
        ).values_list("task_id", "idx", "channel")
    )
    bound = shown_mac(identity, shown_digest(shown_with_start(question, writes)))
    assert Pause.objects.get(jti=minted.claims.jti).shown_digest == bound
    try:
        MigrationExecutor(connection).migrate([(APP, "0005_value_mac")])
        assert Pause.objects.get(jti=minted.claims.jti).shown_digest == shown_mac(
            identity, shown_digest(question)
        )
    finally:
        latest()
    assert Pause.objects.get(jti=minted.claims.jti).shown_digest == bound

    assert continue_graph(graph, answered).ran
    assert paid(thread) == [ASKED]


# -- (h) the checkpoint's metadata edited: its step makes LangGraph's task ids ---------------------


def edit_step(thread: str, checkpoint_id: str, by: int) -> None:
    """The checkpoint's ``metadata["step"]`` moved, written back as JSON text (no key is needed)."""
    row = Checkpoint.objects.get(thread_id=thread, checkpoint_ns="", checkpoint_id=checkpoint_id)
    metadata = dict(row.metadata)
    metadata["step"] = int(metadata["step"]) + by
    raw_update(Checkpoint, row.pk, "metadata", json.dumps(metadata))


def test_a_checkpoints_step_edited_is_refused_and_the_finished_node_does_not_pay_again() -> None:
    """LangGraph makes each task's id from the checkpoint's id and the step its metadata holds, and
    each interrupt's id from its task's: with the step moved, no pending write belongs to a task
    and the interrupt the pause answers is not pending."""
    graph, thread, minted, answered = paused(pay_beside_a_question(DjangoCheckpointSaver()))
    edit_step(thread, minted.claims.checkpoint_id, 1)

    result = continue_graph(graph, answered)

    assert_refused_after_charge(result, thread, minted.claims.jti)
    assert "no longer pending" in str(result.reason)


def test_a_checkpoints_step_edited_pays_again_when_the_interrupts_checks_are_patched_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    start_checks_patched_out(monkeypatch)
    monkeypatch.setattr(bridge, "_shown_now", lambda snapshot, claims: None)
    monkeypatch.setattr(continuing, "shown_verifies", lambda *args: True)
    monkeypatch.setattr(bridge, "_require_pending", lambda *args: None)
    monkeypatch.setattr(strict, "strict_resume_key", lambda: None)
    graph, thread, minted, answered = paused(pay_beside_a_question(DjangoCheckpointSaver()))
    edit_step(thread, minted.claims.checkpoint_id, 1)

    result = continue_graph(graph, answered)

    assert paid(thread) == [ASKED, ASKED], result  # every task of the step runs again
