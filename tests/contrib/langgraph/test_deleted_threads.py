"""Deleting a thread whose pause is pending leaves that pause listed as unresumable.

The saver's ``delete_thread`` (and ``adelete_thread``, ``delete_for_runs``, ``prune`` with
strategy ``delete``) removes the checkpoints a pending pause would continue from. The
pause stays answerable, so it must be seen: the reason is stored on its ledger row, and
the core's one unresumable query (admin, ``turnstate_unresumable``, REST) lists it without
reading LangGraph's tables. Erasure (``turnstate_purge --thread``) is never refused.
"""

from __future__ import annotations

import json
import uuid
from io import StringIO
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command
from langgraph.types import Command

from tests.contrib.langgraph.approvals import config, single_question
from tests.pause_helpers import mint
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver, pause_interrupts
from turnstate_app.models import Pause, UnresumablePause
from turnstate_app.pauses import MintedPause, resume_pause

pytestmark = pytest.mark.django_db(transaction=True)


def paused(saver: DjangoCheckpointSaver, *, run_id: str | None = None) -> tuple[Any, str, MintedPause]:
    """A thread stopped at its one question, and the pause that asks it."""
    thread = f"deleted-{uuid.uuid4().hex[:12]}"
    graph = single_question(saver)
    configurable: dict[str, Any] = {"thread_id": thread}
    if run_id is not None:
        configurable["run_id"] = run_id  # LangGraph stores it in the checkpoints' metadata
    graph.invoke({"log": []}, {"configurable": configurable})
    [minted] = pause_interrupts(graph, config(thread), run_id="r", session_id="s")
    return graph, thread, minted


def unresumable() -> dict[str | None, str]:
    return {row.jti: row.reason for row in UnresumablePause.objects.all()}


def reason_of(minted: MintedPause) -> str | None:
    return Pause.objects.get(jti=minted.claims.jti).unresumable_reason


def test_delete_thread_lists_its_pending_pause_as_unresumable_with_its_own_reason() -> None:
    saver = DjangoCheckpointSaver()
    _, thread, minted = paused(saver)
    _, kept_thread, kept = paused(saver)
    assert minted.claims.jti not in unresumable()

    saver.delete_thread(thread)

    listed = unresumable()
    assert "delete_thread" in listed[minted.claims.jti]
    assert kept.claims.jti not in listed
    assert "delete_thread" in (reason_of(minted) or "")
    assert reason_of(kept) is None

    out = StringIO()
    call_command("turnstate_unresumable", "--json", stdout=out)
    [row] = [r for r in json.loads(out.getvalue())["results"] if r["jti"] == minted.claims.jti]
    assert "delete_thread" in row["reason"] and row["has_ledger"] is True
    out = StringIO()
    call_command("turnstate_unresumable", stdout=out)
    assert "checkpoints deleted" in out.getvalue()


def test_adelete_thread_does_the_same() -> None:
    saver = DjangoCheckpointSaver()
    _, thread, minted = paused(saver)
    async_to_sync(saver.adelete_thread)(thread)
    assert "adelete_thread" in unresumable()[minted.claims.jti]


def test_prune_with_strategy_delete_lists_it_and_keep_latest_does_not() -> None:
    saver = DjangoCheckpointSaver()
    _, kept_thread, kept = paused(saver)
    _, thread, minted = paused(saver)
    saver.prune([kept_thread], strategy="keep_latest")
    saver.prune([thread], strategy="delete")
    listed = unresumable()
    assert "prune" in listed[minted.claims.jti]
    assert kept.claims.jti not in listed


def test_delete_for_runs_lists_the_pause_whose_checkpoint_went() -> None:
    saver = DjangoCheckpointSaver()
    run = str(uuid.uuid4())
    _, _, minted = paused(saver, run_id=run)
    _, _, other = paused(saver, run_id=str(uuid.uuid4()))
    saver.delete_for_runs([run])
    listed = unresumable()
    assert "delete_for_runs" in listed[minted.claims.jti]
    assert other.claims.jti not in listed


def test_only_pending_langgraph_pauses_of_that_thread_are_marked() -> None:
    saver = DjangoCheckpointSaver()
    graph, thread, minted = paused(saver)
    resume_pause(minted.token, "yes")
    graph.invoke(Command(resume={minted.claims.interrupt_id: "yes"}), config(thread))
    foreign = mint(thread_id=thread, interrupt_id=None, scope_hash="elsewhere")
    saver.delete_thread(thread)
    assert reason_of(minted) is None  # answered: nothing left to list
    assert reason_of(foreign) is None  # another integration's pause on the same id


def test_erasing_the_thread_is_never_refused_and_leaves_nothing_listed() -> None:
    saver = DjangoCheckpointSaver()
    _, thread, minted = paused(saver)
    call_command("turnstate_purge", "--thread", thread, stdout=StringIO())
    assert not Pause.objects.filter(thread_id=thread).exists()
    assert minted.claims.jti not in unresumable()
