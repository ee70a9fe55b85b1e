"""Pause groups: answered one by one, continued once when the last is answered, failed when one expires."""

from __future__ import annotations

import multiprocessing
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from tests import lifecycle_processes
from tests.pause_helpers import mint, mint_fields
from turnstate_app.choices import ContinuationState
from turnstate_app.models import Pause
from turnstate_app.pauses import (
    Continuation,
    ContinuationRefused,
    ContinueResult,
    MintedPause,
    continue_once,
    mint_pause,
    resume_pause,
)

SPAWN = multiprocessing.get_context("spawn")


def mint_group(group: str, size: int, *, thread: str = "thread-g", **overrides: Any) -> list[MintedPause]:
    return [
        mint(thread_id=thread, tool_call_id=f"{group}-call-{i}", group=group, **overrides)
        for i in range(size)
    ]


def members_seen(continuation: Continuation) -> list[Any]:
    return [member.answer for member in continuation.members]


@pytest.mark.django_db(transaction=True)
def test_the_last_two_answers_at_once_continue_exactly_once() -> None:
    """The barrier: each round, two processes answer the last two members and continue at once."""
    labels = [f"barrier-{n}" for n in range(4)]
    groups = [mint_group(label, 3, thread=f"thread-{label}") for label in labels]
    for members in groups:
        resume_pause(members[0].token, "first")
    barrier = SPAWN.Barrier(2)
    results = SPAWN.Queue()
    racers = [
        SPAWN.Process(
            target=lifecycle_processes.answer_and_continue,
            args=(
                dict(connection.settings_dict),
                [(members[1 + racer].token, label) for members, label in zip(groups, labels, strict=True)],
                barrier,
                results,
            ),
        )
        for racer in range(2)
    ]
    for racer in racers:
        racer.start()
    outcomes = [results.get(timeout=120) for _ in range(2 * len(labels))]
    for racer in racers:
        racer.join(timeout=30)
    assert all(ran is not None for _, _, ran, _, _ in outcomes), outcomes
    for label in labels:
        mine = [outcome for outcome in outcomes if outcome[0] == label]
        assert Counter(ran for _, _, ran, _, _ in mine) == Counter({True: 1, False: 1}), mine
        [(_, _, _, reason, _)] = [outcome for outcome in mine if not outcome[2]]
        assert reason in {"group incomplete", "already continued", "continuation claimed elsewhere"}
        [(_, winner, _, _, output)] = [outcome for outcome in mine if outcome[2]]
        [run] = lifecycle_processes.runs(label)  # exactly one run, by the one that said it ran
        assert run["pid"] == winner and output == 3
        assert Pause.objects.group_state(label, timezone.now()) == "continued"


@pytest.mark.django_db
def test_a_group_continues_once_when_its_last_member_is_answered() -> None:
    first, second = mint_group("g", 2)
    seen: list[list[Any]] = []

    def run(continuation: Continuation) -> str:
        seen.append(members_seen(continuation))
        return "went on"

    now = timezone.now
    assert Pause.objects.group_state("g", now()) == "pending"
    early = continue_once(resume_pause(second.token, "B"), run)
    assert early == ContinueResult(ran=False, reason="group incomplete")
    assert dict(Pause.objects.values_list("jti", "continuation")) == {  # nothing claimed
        first.claims.jti: None,
        second.claims.jti: ContinuationState.QUEUED,
    }
    last = resume_pause(first.token, "A")
    assert Pause.objects.group_state("g", now()) == "complete"
    assert continue_once(last, run) == ContinueResult(ran=True, output="went on")
    assert seen == [["A", "B"]]  # every member's answer, in mint order
    assert Pause.objects.group_state("g", now()) == "continued"
    assert continue_once(last, run).reason == "already continued"


@pytest.mark.django_db
def test_an_expired_member_fails_the_group_and_operators_see_it(turnstate_settings: Any) -> None:
    turnstate_settings["TOKEN_MAX_AGE"] = 60
    first, second = mint_group("late", 2)
    [done] = mint_group("done", 1, thread="thread-other")
    resume_pause(done.token, "D")
    resumed = resume_pause(first.token, "A")
    later = timezone.now() + timedelta(seconds=61)
    assert Pause.objects.group_state("late", later) == "failed"
    assert set(Pause.objects.in_failed_group(later).values_list("jti", flat=True)) == {
        first.claims.jti,
        second.claims.jti,
    }
    assert Pause.objects.group_state("done", later) == "complete"  # answered in time: nothing expires
    Pause.objects.filter(jti=second.claims.jti).update(expires_at=timezone.now())
    result = continue_once(resumed, lambda continuation: pytest.fail("a failed group must not continue"))
    assert result == ContinueResult(ran=False, reason="group failed: a member expired unanswered")


@pytest.mark.django_db
def test_a_group_belongs_to_one_thread() -> None:
    mint_group("one-thread", 1, thread="thread-a")
    with pytest.raises(ValueError, match="belongs to thread 'thread-a'"):
        mint_pause(**mint_fields(thread_id="thread-b", group="one-thread"))
    assert Pause.objects.in_group("one-thread").count() == 1


@pytest.mark.django_db
def test_group_ids_compare_exactly_on_every_database() -> None:
    mint_group("Trip", 1, thread="thread-x")
    mint_group("trip", 1, thread="thread-y")  # another group, so another thread is fine
    assert Pause.objects.in_group("trip").get().thread_id == "thread-y"


@pytest.mark.django_db
def test_a_group_whose_run_raised_or_refused_failed_and_one_whose_worker_died_is_stalled(
    turnstate_settings: Any,
) -> None:
    turnstate_settings["STALLED_AFTER"] = 60
    crashed, refused, died = (
        mint_group(name, 1, thread=f"thread-{name}")[0] for name in ("crashed", "refused", "died")
    )

    def crash(continuation: Continuation) -> None:
        raise RuntimeError("the tool raised")

    def refuse(continuation: Continuation) -> None:
        raise ContinuationRefused("the interrupt moved on")

    with pytest.raises(RuntimeError):
        continue_once(resume_pause(crashed.token, "A"), crash)
    continue_once(resume_pause(refused.token, "A"), refuse)
    answered_died = resume_pause(died.token, "A")
    # A worker killed after its claim leaves the claim behind and nothing after it.
    assert Pause.objects.claim(Pause.objects.get(jti=died.claims.jti).pk, now=timezone.now())
    now, later = timezone.now(), timezone.now() + timedelta(seconds=61)
    assert Pause.objects.group_state("crashed", now) == "failed"  # at once, not stalled later
    assert Pause.objects.group_state("crashed", later) == "failed"
    assert Pause.objects.group_state("refused", now) == "failed"
    assert Pause.objects.group_state("died", now) == "complete"  # claimed, maybe still running
    assert Pause.objects.group_state("died", later) == "stalled"
    assert [p.group for p in Pause.objects.in_group_state("stalled", later)] == ["died"]
    assert {p.group for p in Pause.objects.in_failed_group(later)} == {"crashed", "refused"}
    assert continue_once(answered_died, crash).reason == "continuation claimed elsewhere"
    with pytest.raises(ValueError, match="unknown group state"):
        Pause.objects.in_group_state("lost", now)


@pytest.mark.django_db(transaction=True, databases=["default", "replica"])
def test_a_group_continues_from_the_primary_behind_an_empty_replica(settings: Any) -> None:
    first, second = mint_group("replicated", 2)
    resume_pause(first.token, "A")
    settings.DATABASE_ROUTERS = ["tests.test_lifecycle_hardening.ReplicaRouter"]
    assert not Pause.objects.exists()  # reads go to the replica, which is empty
    result = continue_once(resume_pause(second.token, "B"), members_seen)
    assert result == ContinueResult(ran=True, output=["A", "B"])


@pytest.mark.django_db
def test_a_group_that_continued_takes_no_new_member() -> None:
    [only] = mint_group("closed", 1, thread="thread-closed")
    assert continue_once(resume_pause(only.token, "A"), members_seen).ran
    with pytest.raises(ValueError, match="has already continued"):
        mint_group("closed", 1, thread="thread-closed")
    assert Pause.objects.in_group("closed").count() == 1
