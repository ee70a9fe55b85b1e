"""Tool approvals as one group of single-use pauses; the run continues once, from the database alone.

The payments agent (``tests.contrib.openai_agents.agents``) runs on the SDK's ``ScriptedModel``
and stops for two approvals: ``pay`` (2400 to acme) and ``notify``.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import uuid
from concurrent.futures import ProcessPoolExecutor
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from tests.contrib.openai_agents.agents import first_run, payments_agent, tool_runs
from tests.contrib.openai_agents.processes import continue_elsewhere
from tests.factories import UserFactory
from tests.pause_helpers import age
from turnstate_app.choices import ContinuationState
from turnstate_app.contrib.openai_agents import (
    DjangoSession,
    StaleRunStateError,
    acontinue_run,
    apause_approvals,
    continue_run,
    pause_approvals,
)
from turnstate_app.contrib.openai_agents.codec import state_mac
from turnstate_app.contrib.openai_agents.models import StoredRunState, StoredSessionItem
from turnstate_app.contrib.openai_agents.states import read_state, replace_state
from turnstate_app.errors import AnswerValidationError
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pauses import MintedPause, aresume_pause, resume_pause

pytestmark = pytest.mark.django_db(transaction=True)
SPAWN = multiprocessing.get_context("spawn")
APPROVE = {"approved": True}


def paused(*, follow_up: bool = False, session: Any = None, owner: Any = None) -> dict[str, MintedPause]:
    """A run stopped for ``pay`` and ``notify``, paused; its pauses by tool name."""
    agent = payments_agent(follow_up=follow_up)
    result = first_run(agent, session=session)
    run_id = f"run-{uuid.uuid4().hex[:10]}"
    session_id = None if session is None else session.session_id
    pauses = pause_approvals(result, agent=agent, run_id=run_id, session_id=session_id, owner=owner)
    return {minted.claims.name or "": minted for minted in pauses}


def answer(pauses: dict[str, MintedPause], **answers: Any) -> list[Any]:
    return [resume_pause(pauses[name].token, value) for name, value in answers.items()]


def rewrite_with_key(row: StoredRunState, state: str, **fields: Any) -> None:
    """Store ``state`` (clear) in ``row`` with a MAC that verifies: a writer holding ``SECRET_KEY``,
    so what is checked is the state's content, not its MAC."""
    mac = state_mac(row.run_id, row.thread_id, row.revision, None, state)
    rows = StoredRunState.objects.filter(pk=row.pk)
    rows.update(state=state, encryption_key_id=None, value_mac=mac, **fields)


def continuations(pauses: dict[str, MintedPause]) -> dict[str, Any]:
    """Where each pause's continuation stands, by tool name (None: not answered)."""
    states = dict(Pause.objects.values_list("jti", "continuation"))
    return {name: states[minted.claims.jti] for name, minted in pauses.items()}


def test_pausing_mints_one_group_showing_each_tool_and_its_arguments() -> None:
    pauses = paused()
    pay, notify = pauses["pay"], pauses["notify"]
    state = StoredRunState.objects.get(run_id=pay.claims.run_id)
    rows = {row.jti: row for row in Pause.objects.all()}
    assert {pay.claims.tool_call_id, notify.claims.tool_call_id} == {"c-pay", "c-notify"}
    assert pay.claims.thread_id == pay.claims.run_id  # no session: the run is the thread
    assert pay.claims.checkpoint_id == notify.claims.checkpoint_id == state.revision
    assert pay.resumable and notify.resumable
    assert rows[pay.claims.jti].group == rows[notify.claims.jti].group is not None
    assert rows[pay.claims.jti].agent == "payments"
    request = json.loads(CheckpointMetadata.objects.get(key="ask_user_request:c-pay").value)
    assert request["tool_name"] == "pay" and request["arguments"] == {"amount": 2400, "to": "acme"}
    assert state.agent == "payments" and state.session_id is None and state.thread_id == pay.claims.run_id


def test_a_partial_answer_continues_nothing() -> None:
    pauses = paused()
    (resumed,) = answer(pauses, pay=APPROVE)
    result = continue_run(payments_agent(), resumed)
    assert (result.ran, result.reason) == (False, "group incomplete")
    assert tool_runs("pay") == []
    assert continuations(pauses) == {"pay": ContinuationState.QUEUED, "notify": None}  # nothing claimed


def test_the_group_continues_once_and_a_redelivery_runs_nothing() -> None:
    pauses = paused()
    first, second = answer(pauses, pay=APPROVE, notify=APPROVE)
    agent = payments_agent()
    result = continue_run(agent, second)
    again = [continue_run(agent, first), continue_run(agent, second)]
    assert result.ran and result.minted == [] and "paid 2400 to acme" in result.output
    assert [(r.ran, r.reason) for r in again] == [(False, "already continued")] * 2
    assert tool_runs("pay") == ["2400 to acme"] and tool_runs("notify") == ["bob"]
    assert set(continuations(pauses).values()) == {ContinuationState.CONTINUED}


def test_a_rejected_call_never_runs_and_the_model_sees_the_message() -> None:
    pauses = paused()
    _, last = answer(pauses, pay=APPROVE, notify={"approved": False, "message": "not bob"})
    result = continue_run(payments_agent(), last)
    assert result.ran and "c-notify: not bob" in result.output
    assert tool_runs("notify") == [] and tool_runs("pay") == ["2400 to acme"]


def test_another_agent_is_refused_before_anything_is_claimed() -> None:
    pauses = paused()
    _, last = answer(pauses, pay=APPROVE, notify=APPROVE)
    result = continue_run(payments_agent(name="other"), last)
    assert not result.ran and "'payments'" in (result.reason or "") and "'other'" in (result.reason or "")
    assert tool_runs("pay") == []
    assert set(continuations(pauses).values()) == {ContinuationState.QUEUED}  # nothing claimed
    assert not Pause.objects.filter(continuation_reason__isnull=False).exists()
    assert continue_run(payments_agent(), last).ran  # the right agent still continues it


def test_an_approval_binds_to_the_arguments_shown_a_state_altered_since_is_refused() -> None:
    pauses = paused()
    row = StoredRunState.objects.get(run_id=pauses["pay"].claims.run_id)
    altered = row.state.replace('\\"amount\\":2400', '\\"amount\\":9999')
    assert altered != row.state
    rewrite_with_key(row, altered)  # its MAC verifies: the question's own check refuses it
    _, last = answer(pauses, pay=APPROVE, notify=APPROVE)
    result = continue_run(payments_agent(), last)
    assert not result.ran and "question changed" in (result.reason or "")
    assert tool_runs("pay") == [] and tool_runs("notify") == []
    pause = Pause.objects.get(jti=last.claims.jti)
    assert (pause.continuation, pause.continuation_reason) == (ContinuationState.REFUSED, result.reason)
    assert set(continuations(pauses).values()) == {ContinuationState.REFUSED}  # the whole group
    again = continue_run(payments_agent(), last)  # never handed again
    assert not again.ran and again.reason == f"continuation failed before: {result.reason}"


def test_override_args_are_refused_at_answer_and_the_pause_stays_pending() -> None:
    pauses = paused()
    with pytest.raises(AnswerValidationError):
        resume_pause(pauses["pay"].token, {"approved": True, "override_args": {"amount": 1, "to": "x"}})
    assert Pause.objects.get(jti=pauses["pay"].claims.jti).status == "pending"


def test_the_state_rows_compare_and_set_refuses_a_stale_writer() -> None:
    pauses = paused()
    run_id = pauses["pay"].claims.run_id
    stored = read_state(run_id)
    assert stored is not None
    newer = replace_state(run_id, stored.text, expected_revision=stored.revision)
    with pytest.raises(StaleRunStateError):
        replace_state(run_id, stored.text, expected_revision=stored.revision)
    assert StoredRunState.objects.get(run_id=run_id).revision == newer != stored.revision


def test_a_state_this_sdk_cannot_read_is_listed_unresumable_never_a_crash() -> None:
    pauses = paused()
    row = StoredRunState.objects.get(run_id=pauses["pay"].claims.run_id)
    newer = row.state.replace(f'"$schemaVersion": "{row.schema_version}"', '"$schemaVersion": "99.0"')
    rewrite_with_key(row, newer, schema_version="99.0")  # as a newer SDK of this app wrote it
    (first,) = answer(pauses, pay=APPROVE)
    early = continue_run(payments_agent(), first)
    assert (early.ran, early.reason) == (False, "group incomplete")
    rows: list[Any] = list(CheckpointMetadata.objects.unresumable())
    listed = {row.jti: row.reason for row in rows}
    assert "99.0" in listed[pauses["notify"].claims.jti]
    (last,) = answer(pauses, notify=APPROVE)
    result = continue_run(payments_agent(), last)
    assert not result.ran and "99.0" in (result.reason or "")
    assert tool_runs("pay") == []


def test_the_next_stop_is_the_next_group_with_owner_agent_and_session_carried() -> None:
    owner: Any = UserFactory()
    session = DjangoSession(f"s-{uuid.uuid4().hex[:8]}")
    pauses = paused(follow_up=True, session=session, owner=owner)
    assert pauses["pay"].claims.thread_id == session.session_id
    _, last = answer(pauses, pay=APPROVE, notify=APPROVE)
    result = continue_run(payments_agent(follow_up=True), last)
    (refund,) = result.minted
    assert result.ran and refund.claims.name == "refund" and refund.claims.thread_id == session.session_id
    row = Pause.objects.get(jti=refund.claims.jti)
    assert (row.owner, row.agent, row.run_id) == (owner, "payments", pauses["pay"].claims.run_id)
    done = continue_run(payments_agent(follow_up=True), resume_pause(refund.token, APPROVE, user=owner))
    assert done.ran and "refunded 100" in done.output and tool_runs("refund") == ["100"]
    items = session.get_items_sync()  # the SDK kept the whole run in the session, across continuations
    assert items[0]["content"].startswith("Pay acme") and "done." in json.dumps(items[-1])


def test_async_twins() -> None:
    async def run() -> Any:
        agent = payments_agent()
        result = await agent_run(agent)
        pauses = await apause_approvals(
            result, agent=agent, run_id=f"run-{uuid.uuid4().hex}", session_id=None
        )
        answered = [await aresume_pause(minted.token, APPROVE) for minted in pauses]
        return await acontinue_run(agent, answered[-1])

    async def agent_run(agent: Any) -> Any:
        from agents import Runner

        return await Runner.run(agent, "Pay acme 2400 and tell bob.")

    result = asyncio.run(run())
    assert result.ran and tool_runs("pay") == ["2400 to acme"]


def test_a_run_paused_here_continues_in_another_process_from_the_database_alone() -> None:
    pauses = paused()
    _, last = answer(pauses, pay=APPROVE, notify=APPROVE)
    with ProcessPoolExecutor(1, mp_context=SPAWN) as pool:
        ran, reason = pool.submit(
            continue_elsewhere, dict(connection.settings_dict), last.claims.jti, None
        ).result(timeout=180)
    assert (ran, reason) == (True, None)
    assert tool_runs("pay") == ["2400 to acme"]


def test_four_processes_continuing_a_complete_group_at_once_run_the_tool_once() -> None:
    pauses = paused()
    _, last = answer(pauses, pay=APPROVE, notify=APPROVE)
    with SPAWN.Manager() as manager, ProcessPoolExecutor(4, mp_context=SPAWN) as pool:
        barrier = manager.Barrier(4)
        settings = dict(connection.settings_dict)
        futures = [pool.submit(continue_elsewhere, settings, last.claims.jti, barrier) for _ in range(4)]
        outcomes = [future.result(timeout=180) for future in futures]
    assert sorted(ran for ran, _ in outcomes) == [False, False, False, True], outcomes
    assert {reason for ran, reason in outcomes if not ran} <= {
        "already continued",
        "continuation claimed elsewhere",
    }
    assert tool_runs("pay") == ["2400 to acme"] and tool_runs("notify") == ["bob"]


def test_purge_by_thread_reaches_the_state_and_the_session_rows() -> None:
    session = DjangoSession(f"s-{uuid.uuid4().hex[:8]}")
    other = DjangoSession(f"s-{uuid.uuid4().hex[:8]}")
    pauses = paused(session=session)
    paused(session=other)
    call_command("turnstate_purge", "--thread", session.session_id, stdout=StringIO())
    assert not StoredRunState.objects.filter(thread_id=session.session_id).exists()
    assert not StoredSessionItem.objects.filter(session_id=session.session_id).exists()
    assert not Pause.objects.filter(jti=pauses["pay"].claims.jti).exists()
    assert StoredRunState.objects.filter(thread_id=other.session_id).count() == 1
    assert other.get_items_sync() != []


def test_age_purge_erases_runs_left_without_pauses_and_keeps_the_ones_still_paused() -> None:
    done, live = DjangoSession(f"s-{uuid.uuid4().hex[:8]}"), DjangoSession(f"s-{uuid.uuid4().hex[:8]}")
    finished = paused(session=done)
    _, last = answer(finished, pay=APPROVE, notify=APPROVE)
    assert continue_run(payments_agent(), last).ran
    for minted in finished.values():
        age(minted, 40)
    paused(session=live)
    call_command("turnstate_purge", "--older-than", "30", stdout=StringIO())
    assert not StoredRunState.objects.filter(thread_id=done.session_id).exists()
    assert done.get_items_sync() == []
    assert StoredRunState.objects.filter(thread_id=live.session_id).count() == 1  # its pauses still wait
    assert live.get_items_sync() != []


def test_a_run_that_did_not_stop_or_a_run_id_paused_twice_is_refused_and_nothing_is_minted() -> None:
    from agents import Agent, Runner
    from agents.testing import ScriptedModel, assistant_message

    chat = Agent(name="chat", model=ScriptedModel([[assistant_message("hi")]]))
    with pytest.raises(ValueError, match="did not stop for approvals"):
        pause_approvals(Runner.run_sync(chat, "hello"), agent=chat, run_id="run-none", session_id=None)
    pauses = paused()
    agent = payments_agent()
    run_id = pauses["pay"].claims.run_id
    with pytest.raises(ValueError, match="has a stored state already"):
        pause_approvals(first_run(agent), agent=agent, run_id=run_id, session_id=None)
    assert Pause.objects.filter(run_id=run_id).count() == 2
    assert not Pause.objects.filter(run_id="run-none").exists()


def test_a_session_other_than_the_runs_is_refused_and_nothing_runs() -> None:
    pauses = paused(session=DjangoSession(f"s-{uuid.uuid4().hex[:8]}"))
    _, last = answer(pauses, pay=APPROVE, notify=APPROVE)
    result = continue_run(payments_agent(), last, session=DjangoSession("someone-else"))
    assert not result.ran and "'someone-else'" in (result.reason or "")
    assert tool_runs("pay") == []
