"""What was shown and what was answered hold against someone who can write the database but does
not hold ``SECRET_KEY``.

Each attack edits rows with a raw ``UPDATE`` (Django's cursor), as a leaked database password
would, between the answer and the continuation: through a plain ``mint_pause`` + ``continue_once``
and through the LangGraph bridge's interrupts. Each is refused and nothing runs; and each test
also patches the check out (the MAC verifies whatever it is given) and shows that the edited
answer or question then *does* run, so the test can fail. A MAC made under a key since moved to
``SECRET_KEY_FALLBACKS`` still verifies; an honest run still runs; the migration keys the pauses
recorded before.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from django.test import override_settings

from tests.contrib.langgraph.approvals import config, runs, single_question, start
from tests.contrib.langgraph.test_shown import edit_interrupts
from tests.contrib.raw_edits import raw_update
from tests.pause_helpers import mint
from tests.test_migrations import migrate_to, migrate_to_latest
from turnstate_app import integrity
from turnstate_app.choices import ContinuationState
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver, continue_graph, pause_interrupts
from turnstate_app.keys import answer_key, payload_key
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pauses import Continuation, ResumedPause, continue_once, handoff, resume_pause, resumed
from turnstate_app.pauses import continuation as continuing
from turnstate_app.pauses.binding import identity_of, shown_mac
from turnstate_app.pauses.redelivery import rebuilt
from turnstate_app.pauses.shown import shown_digest
from turnstate_app.ports import get_default_store

pytestmark = pytest.mark.django_db(transaction=True)

ASKED = {"tool": "transfer", "args": {"to": "alice", "amount": 10}}
REJECTED = {"approved": False}
APPROVED = {"approved": True}
ANSWER_CHANGED = "the answer changed since it was given"
QUESTION_CHANGED = "the question changed since it was asked"
NO_RECORD = "no record of what was shown"


def answer_verifies_anything(monkeypatch: pytest.MonkeyPatch) -> None:
    """The answer's checks patched out: every MAC verifies, the ledger's and the stored row's own."""
    monkeypatch.setattr(handoff, "answer_verifies", lambda *args: True)
    monkeypatch.setattr(integrity, "row_verifies", lambda *args: True)


def shown_verifies_anything(monkeypatch: pytest.MonkeyPatch) -> None:
    """The question's check patched out: every MAC verifies."""
    monkeypatch.setattr(continuing, "shown_verifies", lambda *args: True)


def stored_row(claims: Any, key: str) -> CheckpointMetadata:
    return CheckpointMetadata.objects.get(
        thread_id=claims.thread_id, checkpoint_id=claims.checkpoint_id, key=key
    )


def rewrite_answer(claims: Any, answer: Any) -> None:
    """The stored ``answer:<jti>`` row rewritten (clear JSON, as the store keeps it unencrypted)."""
    raw_update(CheckpointMetadata, stored_row(claims, answer_key(claims)).pk, "value", json.dumps(answer))


def set_shown(claims: Any, value: str | None) -> None:
    raw_update(Pause, Pause.objects.get(jti=claims.jti).pk, "shown_digest", value)


def still_shown_from_store(member: ResumedPause) -> Any:
    """What a plain integration shows: the request as the store holds it now."""
    return json.loads(stored_row(member.claims, payload_key(member.claims)).value)


def transfers(done: list[Any]) -> Any:
    """The tool: transfers only when the answer approves it."""

    def run(continuation: Continuation) -> str:
        if continuation.resumed.answer == APPROVED:
            done.append(continuation.resumed.claims.jti)
            return "transferred"
        return "not transferred"

    return run


def refused(jti: str) -> bool:
    return Pause.objects.get(jti=jti).continuation == ContinuationState.REFUSED


# -- the plain lifecycle -----------------------------------------------------------------------


def rejected_then_rewritten() -> Any:
    minted = mint(request=ASKED)
    resume_pause(minted.token, REJECTED)
    rewrite_answer(minted.claims, APPROVED)
    return minted


def test_a_rewritten_answer_row_is_refused_and_nothing_runs() -> None:
    minted = rejected_then_rewritten()
    done: list[Any] = []

    result = continue_once(resumed(minted.claims.jti), transfers(done), still_shown=still_shown_from_store)

    assert not result.ran and done == []
    assert result.reason is not None and ANSWER_CHANGED in result.reason
    assert refused(minted.claims.jti)


def test_a_rewritten_answer_row_runs_when_the_check_is_patched_out(monkeypatch: pytest.MonkeyPatch) -> None:
    answer_verifies_anything(monkeypatch)
    minted = rejected_then_rewritten()
    done: list[Any] = []

    result = continue_once(resumed(minted.claims.jti), transfers(done), still_shown=still_shown_from_store)

    assert result.ran and result.output == "transferred" and done == [minted.claims.jti]


def test_a_redelivered_rewritten_answer_is_refused_and_nothing_runs() -> None:
    minted = rejected_then_rewritten()
    done: list[Any] = []
    again = rebuilt(Pause.objects.get(jti=minted.claims.jti), get_default_store())
    assert again is not None

    result = continue_once(again, transfers(done))

    assert not result.ran and done == [] and refused(minted.claims.jti)


def test_an_answer_row_with_its_mac_removed_is_refused() -> None:
    minted = mint(request=ASKED)
    resume_pause(minted.token, APPROVED)
    raw_update(Pause, Pause.objects.get(jti=minted.claims.jti).pk, "answer_mac", None)
    done: list[Any] = []

    result = continue_once(resumed(minted.claims.jti), transfers(done))

    assert not result.ran and done == [] and result.reason is not None and ANSWER_CHANGED in result.reason


def test_a_deleted_answer_row_is_refused() -> None:
    minted = mint(request=ASKED)
    resume_pause(minted.token, APPROVED)
    stored_row(minted.claims, answer_key(minted.claims)).delete()
    ran: list[Any] = []

    result = continue_once(resumed(minted.claims.jti), ran.append)

    assert not result.ran and ran == [] and result.reason is not None and ANSWER_CHANGED in result.reason


def edited_question(minted: Any) -> dict[str, Any]:
    """The stored request edited: a larger transfer to someone else."""
    edited = {"tool": "transfer", "args": {"to": "mallory", "amount": 9999}}
    raw_update(
        CheckpointMetadata,
        stored_row(minted.claims, payload_key(minted.claims)).pk,
        "value",
        json.dumps(edited),
    )
    return edited


def test_a_removed_shown_mac_is_refused() -> None:
    minted = mint(request=ASKED)
    resumed_now = resume_pause(minted.token, APPROVED)
    set_shown(minted.claims, None)
    done: list[Any] = []

    result = continue_once(resumed_now, transfers(done), still_shown=still_shown_from_store)

    assert not result.ran and done == [] and result.reason is not None and NO_RECORD in result.reason
    assert refused(minted.claims.jti)


def test_a_removed_shown_mac_runs_when_the_check_is_patched_out(monkeypatch: pytest.MonkeyPatch) -> None:
    shown_verifies_anything(monkeypatch)
    minted = mint(request=ASKED)
    resumed_now = resume_pause(minted.token, APPROVED)
    set_shown(minted.claims, None)
    done: list[Any] = []

    assert continue_once(resumed_now, transfers(done), still_shown=still_shown_from_store).ran
    assert done == [minted.claims.jti]


@pytest.mark.parametrize("forged_by", ["plain sha-256", "guessed key"])
def test_an_edited_question_with_a_recomputed_digest_is_refused(forged_by: str) -> None:
    minted = mint(request=ASKED)
    resumed_now = resume_pause(minted.token, APPROVED)
    edited = edited_question(minted)
    set_shown(minted.claims, forge(minted.claims, edited, forged_by))
    done: list[Any] = []

    result = continue_once(resumed_now, transfers(done), still_shown=still_shown_from_store)

    assert not result.ran and done == [] and result.reason is not None and QUESTION_CHANGED in result.reason
    assert refused(minted.claims.jti)


@pytest.mark.parametrize("forged_by", ["plain sha-256", "guessed key"])
def test_an_edited_question_runs_when_the_check_is_patched_out(
    forged_by: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown_verifies_anything(monkeypatch)
    minted = mint(request=ASKED)
    resumed_now = resume_pause(minted.token, APPROVED)
    edited = edited_question(minted)
    set_shown(minted.claims, forge(minted.claims, edited, forged_by))
    shown: list[Any] = []

    def run(continuation: Continuation) -> str:
        shown.append(still_shown_from_store(continuation.resumed))
        return "transferred"

    assert continue_once(resumed_now, run, still_shown=still_shown_from_store).ran
    assert shown == [edited]


def forge(claims: Any, edited: Any, forged_by: str) -> str:
    """What an attacker without ``SECRET_KEY`` can write as the record of ``edited``."""
    if forged_by == "plain sha-256":
        return shown_digest(edited)
    with override_settings(SECRET_KEY="turnstate-guessed-key"):
        return shown_mac(identity_of(claims), shown_digest(edited))


def test_macs_made_under_a_key_now_in_the_fallbacks_still_verify() -> None:
    with override_settings(SECRET_KEY="turnstate-old-key", SECRET_KEY_FALLBACKS=[]):
        minted = mint(request=ASKED)
        resume_pause(minted.token, APPROVED)
    done: list[Any] = []
    with override_settings(SECRET_KEY="turnstate-new-key", SECRET_KEY_FALLBACKS=["turnstate-old-key"]):
        result = continue_once(
            resumed(minted.claims.jti), transfers(done), still_shown=still_shown_from_store
        )
    assert result.ran and done == [minted.claims.jti]


def test_macs_made_under_a_key_that_was_dropped_verify_no_more() -> None:
    with override_settings(SECRET_KEY="turnstate-old-key", SECRET_KEY_FALLBACKS=[]):
        minted = mint(request=ASKED)
        resume_pause(minted.token, APPROVED)
    done: list[Any] = []
    with override_settings(SECRET_KEY="turnstate-new-key", SECRET_KEY_FALLBACKS=[]):
        result = continue_once(
            resumed(minted.claims.jti), transfers(done), still_shown=still_shown_from_store
        )
    assert not result.ran and done == []


def test_an_honest_run_runs_from_the_store_and_in_process() -> None:
    from_store = mint(request=ASKED)
    resume_pause(from_store.token, APPROVED)
    in_process = resume_pause(mint(request=ASKED).token, APPROVED)
    done: list[Any] = []

    assert continue_once(
        resumed(from_store.claims.jti), transfers(done), still_shown=still_shown_from_store
    ).ran
    assert continue_once(in_process, transfers(done), still_shown=still_shown_from_store).ran
    assert done == [from_store.claims.jti, in_process.claims.jti]
    assert Pause.objects.filter(answer_mac__isnull=True).count() == 0


# -- the LangGraph bridge's interrupts ----------------------------------------------------------


def paused_graph() -> tuple[Any, str, Any]:
    thread = f"binding-{uuid.uuid4().hex[:12]}"
    graph = single_question(DjangoCheckpointSaver())
    start(graph, thread)
    [minted] = pause_interrupts(graph, config(thread), run_id="r", session_id="s")
    return graph, thread, minted


def log_of(graph: Any, thread: str) -> list[str]:
    return list(graph.get_state(config(thread)).values.get("log", []))


def test_langgraph_a_rewritten_answer_row_is_refused_and_the_node_does_not_run() -> None:
    graph, thread, minted = paused_graph()
    resume_pause(minted.token, "no")
    rewrite_answer(minted.claims, "yes")

    result = continue_graph(graph, resumed(minted.claims.jti))

    assert not result.ran and result.reason is not None and ANSWER_CHANGED in result.reason
    assert runs(thread, "ask") == 0 and runs(thread, "book") == 0 and refused(minted.claims.jti)


def test_langgraph_a_rewritten_answer_row_runs_when_the_check_is_patched_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answer_verifies_anything(monkeypatch)
    graph, thread, minted = paused_graph()
    resume_pause(minted.token, "no")
    rewrite_answer(minted.claims, "yes")

    assert continue_graph(graph, resumed(minted.claims.jti)).ran
    assert runs(thread, "book") == 1 and "ask:yes" in log_of(graph, thread)


def test_langgraph_a_removed_shown_mac_is_refused() -> None:
    graph, thread, minted = paused_graph()
    resumed_now = resume_pause(minted.token, "yes")
    set_shown(minted.claims, None)

    result = continue_graph(graph, resumed_now)

    assert not result.ran and result.reason is not None and NO_RECORD in result.reason
    assert runs(thread, "ask") == 0 and runs(thread, "book") == 0


def test_langgraph_a_removed_shown_mac_runs_when_the_check_is_patched_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shown_verifies_anything(monkeypatch)
    graph, thread, minted = paused_graph()
    resumed_now = resume_pause(minted.token, "yes")
    set_shown(minted.claims, None)

    assert continue_graph(graph, resumed_now).ran and runs(thread, "book") == 1


EDITED_INTERRUPT = {"question": "Go ahead and pay EUR 9999?"}


@pytest.mark.parametrize("forged_by", ["plain sha-256", "guessed key"])
def test_langgraph_an_edited_interrupt_with_a_recomputed_digest_is_refused(forged_by: str) -> None:
    graph, thread, minted = paused_graph()
    resumed_now = resume_pause(minted.token, "yes")
    edit_interrupts(thread, lambda value: EDITED_INTERRUPT)
    set_shown(minted.claims, forge(minted.claims, EDITED_INTERRUPT, forged_by))

    result = continue_graph(graph, resumed_now)

    assert not result.ran and result.reason is not None and QUESTION_CHANGED in result.reason
    assert runs(thread, "ask") == 0 and runs(thread, "book") == 0


@pytest.mark.parametrize("forged_by", ["plain sha-256", "guessed key"])
def test_langgraph_an_edited_interrupt_runs_when_the_check_is_patched_out(
    forged_by: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown_verifies_anything(monkeypatch)
    graph, thread, minted = paused_graph()
    resumed_now = resume_pause(minted.token, "yes")
    edit_interrupts(thread, lambda value: EDITED_INTERRUPT)
    set_shown(minted.claims, forge(minted.claims, EDITED_INTERRUPT, forged_by))

    assert continue_graph(graph, resumed_now).ran and runs(thread, "book") == 1


def test_langgraph_macs_under_a_fallback_key_verify_and_an_honest_run_runs() -> None:
    with override_settings(SECRET_KEY="turnstate-old-key", SECRET_KEY_FALLBACKS=[]):
        graph, thread, minted = paused_graph()
        resume_pause(minted.token, "yes")
    with override_settings(SECRET_KEY="turnstate-new-key", SECRET_KEY_FALLBACKS=["turnstate-old-key"]):
        result = continue_graph(graph, resumed(minted.claims.jti))
        assert result.ran and runs(thread, "ask") == 1 and runs(thread, "book") == 1
        assert "ask:yes" in log_of(graph, thread)


# -- 0013: the pauses recorded before are keyed ---------------------------------------------------

BEFORE = [("turnstate_app", "0012_pause_state_indexes")]


def test_0013_keys_every_pause_not_yet_continued_so_it_continues() -> None:
    """Pending and answered pauses, recorded with plain digests (a bridge's own ``shown`` among
    them) or none (keyed from the request), continue after the migration; edited, they are
    refused; a record it cannot read stays unkeyed and is refused."""
    shown_by_bridge = mint(request=ASKED, shown={"tool": "transfer", "shown": "as the bridge shows it"})
    from_request = mint(request=ASKED)
    pending = mint(request=ASKED)
    request_lost = mint(request=ASKED)
    answers = {shown_by_bridge: APPROVED, from_request: APPROVED, request_lost: APPROVED}
    for minted, answer in answers.items():
        resume_pause(minted.token, answer)
    ids = {m.claims.jti: m for m in [shown_by_bridge, from_request, pending, request_lost]}
    plain = {
        shown_by_bridge.claims.jti: shown_digest({"tool": "transfer", "shown": "as the bridge shows it"}),
        from_request.claims.jti: None,  # minted before digests were recorded
        pending.claims.jti: shown_digest(ASKED),
        request_lost.claims.jti: None,
    }
    try:
        pause_model, row_model = migrate_to(BEFORE)
        for jti, digest in plain.items():
            pause_model.objects.filter(jti=jti).update(shown_digest=digest)
        lost_claims = request_lost.claims
        row_model.objects.filter(
            thread_id=lost_claims.thread_id,
            checkpoint_id=lost_claims.checkpoint_id,
            key=payload_key(lost_claims),
        ).delete()
    finally:
        migrate_to_latest()

    macs = dict(Pause.objects.values_list("jti", "answer_mac"))
    assert macs[pending.claims.jti] is None and all(macs[m.claims.jti] for m in answers)
    done: list[Any] = []
    bridge = continue_once(
        resumed(shown_by_bridge.claims.jti),
        transfers(done),
        still_shown=lambda member: {"tool": "transfer", "shown": "as the bridge shows it"},
    )
    assert bridge.ran
    assert continue_once(
        resumed(from_request.claims.jti), transfers(done), still_shown=still_shown_from_store
    ).ran
    lost = continue_once(resumed(request_lost.claims.jti), transfers(done), still_shown=lambda member: ASKED)
    assert not lost.ran and lost.reason is not None and NO_RECORD in lost.reason
    assert done == [shown_by_bridge.claims.jti, from_request.claims.jti]
    # The pending one, answered now, continues; its question edited, it would not.
    later = resume_pause(ids[pending.claims.jti].token, APPROVED)
    assert continue_once(later, transfers(done), still_shown=still_shown_from_store).ran
