"""What operators see of the lifecycle: the STALLED_AFTER check, retention of groups, the group's
state on the REST detail and the admin page."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from tests.api_support import client_for
from tests.pause_helpers import age, mint, rows_of
from tests.test_checks import ids
from turnstate_app.models import Pause
from turnstate_app.pauses import MintedPause, continue_once, resume_pause
from turnstate_app.retention import purge_pauses


@pytest.mark.parametrize("value", [0, -1, True, "600", float("inf"), float("nan"), None])
def test_e014_stalled_after_not_a_positive_number(turnstate_settings: Any, value: Any) -> None:
    assert ids(turnstate_settings, {"STALLED_AFTER": value}) == ["turnstate.E014"]


@pytest.mark.parametrize("value", [0.5, 60, 3600])
def test_a_stalled_after_in_seconds_passes(turnstate_settings: Any, value: Any) -> None:
    assert ids(turnstate_settings, {"STALLED_AFTER": value}) == []


def cutoff() -> datetime:
    return timezone.now() - timedelta(days=30)


def old_group(name: str, size: int) -> list[MintedPause]:
    return [mint(thread_id=f"thread-{name}", tool_call_id=f"{name}-{i}", group=name) for i in range(size)]


def purged() -> set[str]:
    before = set(Pause.objects.values_list("jti", flat=True))
    purge_pauses(Pause.objects.purgeable(cutoff()))
    return before - set(Pause.objects.values_list("jti", flat=True))


@pytest.mark.django_db
def test_retention_keeps_a_group_whole_until_it_continued() -> None:
    waiting = old_group("waiting", 2)  # one answered long ago, one pending
    resume_pause(waiting[0].token, "A")
    unfinished = old_group("unfinished", 2)  # all answered long ago, never continued
    for member in unfinished:
        resume_pause(member.token, "A")
    done = old_group("done", 2)
    for member in done:
        resumed = resume_pause(member.token, "A")
    assert continue_once(resumed, lambda continuation: None).ran
    for member in (*waiting, *unfinished, *done):
        age(member, 40)

    assert purged() == {member.claims.jti for member in done}
    assert all(rows_of(member) == set() for member in done)  # request, turn state and answer rows
    assert all(rows_of(member) for member in (*waiting, *unfinished))
    assert Pause.objects.purgeable(cutoff(), include_pending=True).count() == 4  # an operator may insist


@pytest.mark.django_db
def test_the_rest_detail_shows_the_group_and_its_state(users: dict[str, Any]) -> None:
    first, second = (
        mint(owner=users["owner"], thread_id="thread-r", tool_call_id=f"r-{i}", group="trip")
        for i in range(2)
    )
    client = client_for(users["owner"])
    detail = client.get(f"/api/turnstate/pauses/{first.claims.jti}/").json()
    assert (detail["group"], detail["group_state"]) == ("trip", "pending")
    resume_pause(first.token, "A")
    answer = client.post(
        "/api/turnstate/pauses/resume/", {"token": second.token, "answer": "B"}, format="json"
    ).json()
    assert set(answer) == {"jti", "status", "resumable"}  # the resume body is the contract's
    assert client.get(f"/api/turnstate/pauses/{first.claims.jti}/").json()["group_state"] == "complete"
    alone = mint(owner=users["owner"])
    detail = client.get(f"/api/turnstate/pauses/{alone.claims.jti}/").json()
    assert (detail["group"], detail["group_state"]) == (None, None)


@pytest.mark.django_db
def test_the_admin_shows_the_group_state_and_lists_failed_groups(
    staff_client: Any, turnstate_settings: Any
) -> None:
    stalled_member = mint(thread_id="thread-s", tool_call_id="s-0", group="slow")
    resume_pause(stalled_member.token, "A")  # claimed an hour ago by a worker that never finished
    claimed = Pause.objects.claim(
        Pause.objects.get(jti=stalled_member.claims.jti).pk, now=timezone.now() - timedelta(hours=1)
    )
    assert claimed
    turnstate_settings["TOKEN_MAX_AGE"] = 1
    lost = mint(thread_id="thread-l", tool_call_id="l-0", group="lost")
    Pause.objects.filter(jti=lost.claims.jti).update(expires_at=timezone.now() - timedelta(seconds=1))
    kept = mint(thread_id="thread-k", tool_call_id="k-0", group="kept")
    client = staff_client("view_pause")
    pk = Pause.objects.get(jti=lost.claims.jti).pk
    page = client.get(f"/admin/turnstate_app/pause/{pk}/change/").content.decode()
    assert re.search(r"Group state:?</label>\s*<div class=\"readonly\">failed<", page), page
    listed = client.get("/admin/turnstate_app/pause/?group_state=failed").content.decode()
    assert lost.claims.jti in listed and kept.claims.jti not in listed
    stalled = client.get("/admin/turnstate_app/pause/?continuation=stalled")
    assert stalled.status_code == 200
    assert stalled_member.claims.jti in stalled.content.decode()
    assert lost.claims.jti not in stalled.content.decode()
