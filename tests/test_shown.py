"""An answer binds to the question the person saw: ``mint_pause(shown=)``, ``continue_once(still_shown=)``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from tests.pause_helpers import amint, mint, mint_fields
from tests.test_continuation import STATEMENTS_PER_CONTINUATION
from tests.test_pauses import data_statements
from turnstate_app.choices import ContinuationState
from turnstate_app.errors import CheckpointFieldError
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pauses import (
    Continuation,
    ResumedPause,
    acontinue_once,
    aresume_pause,
    continue_once,
    mint_pause,
    resume_pause,
)
from turnstate_app.pauses.binding import identity_of, shown_mac
from turnstate_app.pauses.shown import shown_digest
from turnstate_app.status import lifecycle_status

pytestmark = pytest.mark.django_db

SHOWN = {"tool": "book_flight", "args": {"destination": "Lisbon", "seats": 2}}


def recorded(jti: str) -> str | None:
    return Pause.objects.values_list("shown_digest", flat=True).get(jti=jti)


def keyed(jti: str, shown: Any) -> str:
    """The MAC a pause records of ``shown``: its digest and the pause's identity, keyed."""
    return shown_mac(identity_of(Pause.objects.get(jti=jti)), shown_digest(shown))


def test_the_digest_is_of_canonical_json_key_order_and_whitespace_do_not_count() -> None:
    spaced = json.loads('{ "args" : { "seats": 2, "destination": "Lisbon" },\n "tool": "book_flight" }')
    assert shown_digest(spaced) == shown_digest(SHOWN)
    assert len(shown_digest(SHOWN)) == 64
    assert shown_digest({**SHOWN, "args": {"destination": "Lisbon", "seats": 3}}) != shown_digest(SHOWN)
    assert shown_digest({"text": "café"}) != shown_digest({"text": "cafe"})


def test_a_pause_records_the_keyed_digest_of_its_request_by_default_or_of_what_is_shown() -> None:
    by_default = mint(request={"question": "Which date?"})
    shown = mint(shown=SHOWN)
    assert recorded(by_default.claims.jti) == keyed(by_default.claims.jti, {"question": "Which date?"})
    assert recorded(shown.claims.jti) == keyed(shown.claims.jti, SHOWN)
    assert recorded(shown.claims.jti) != shown_digest(SHOWN)  # not the plain digest anyone can compute


def test_what_is_shown_must_be_json_and_is_refused_before_anything_is_written() -> None:
    with pytest.raises(CheckpointFieldError, match="shown"):
        mint(shown={"when": object()})
    assert not Pause.objects.exists() and not CheckpointMetadata.objects.exists()


def test_an_unchanged_question_continues_whatever_its_key_order() -> None:
    resumed = resume_pause(mint(shown=SHOWN).token, {"approved": True})
    asked: list[str] = []

    def still_shown(member: ResumedPause) -> Any:
        asked.append(member.claims.jti)
        return {"args": {"seats": 2, "destination": "Lisbon"}, "tool": "book_flight"}

    result = continue_once(resumed, lambda continuation: "booked", still_shown=still_shown)
    assert result.ran and result.output == "booked"
    assert asked == [resumed.claims.jti]


def test_a_changed_question_runs_nothing_and_is_listed_as_a_failed_continuation() -> None:
    minted = mint(shown=SHOWN)
    resumed = resume_pause(minted.token, {"approved": True})
    runs: list[Continuation] = []
    now = {**SHOWN, "args": {"destination": "Lisbon", "seats": 9}}

    result = continue_once(resumed, runs.append, still_shown=lambda member: now)

    assert not result.ran and runs == []
    assert result.reason is not None and "the question changed since it was asked" in result.reason
    jti = minted.claims.jti
    assert keyed(jti, SHOWN)[:12] in result.reason and keyed(jti, now)[:12] in result.reason
    pause = Pause.objects.get(jti=minted.claims.jti)
    assert pause.continuation == ContinuationState.REFUSED and pause.continuation_reason == result.reason
    assert list(Pause.objects.continuation_failed()) == [pause]
    assert lifecycle_status().failed_continuations == 1  # turnstate_status, GET status/
    # A redelivery, even with the question restored, runs nothing: the refusal stands.
    again = continue_once(resumed, runs.append, still_shown=lambda member: SHOWN)
    assert not again.ran and runs == [] and again.reason == f"continuation failed before: {result.reason}"


def test_the_admin_lists_the_refusal_among_the_failed_continuations(admin_client: Client) -> None:
    refused = resume_pause(mint(shown=SHOWN).token, "yes")
    continue_once(refused, lambda continuation: None, still_shown=lambda member: {"changed": True})
    continued = resume_pause(mint(shown=SHOWN).token, "yes")
    assert continue_once(continued, lambda continuation: None, still_shown=lambda member: SHOWN).ran

    changelist = reverse("admin:turnstate_app_pause_changelist")
    listed = admin_client.get(changelist, {"continuation": "refused"}).context["cl"]
    assert [pause.jti for pause in listed.result_list] == [refused.claims.jti]
    went_on = admin_client.get(changelist, {"continuation": "continued"}).context["cl"]
    assert [pause.jti for pause in went_on.result_list] == [continued.claims.jti]
    pk = Pause.objects.get(jti=refused.claims.jti).pk
    page = admin_client.get(reverse("admin:turnstate_app_pause_change", args=[pk]))
    assert "the question changed since it was asked" in page.content.decode()


def test_a_pause_with_no_record_of_what_was_shown_is_refused_when_its_question_is_checked() -> None:
    minted = mint(shown=SHOWN)
    Pause.objects.filter(jti=minted.claims.jti).update(shown_digest=None)
    resumed = resume_pause(minted.token, "yes")
    runs: list[Continuation] = []

    result = continue_once(resumed, runs.append, still_shown=lambda member: SHOWN)
    assert not result.ran and runs == []
    assert result.reason is not None and "no record of what was shown" in result.reason
    assert Pause.objects.get(jti=minted.claims.jti).continuation == ContinuationState.REFUSED


def test_without_still_shown_nothing_is_checked() -> None:
    resumed = resume_pause(mint(shown=SHOWN).token, "yes")
    assert continue_once(resumed, lambda continuation: "ran").output == "ran"


def test_every_member_of_a_group_is_checked_and_one_changed_question_refuses_the_group() -> None:
    first = mint(1, group="trip", shown={"call": 1})
    second = mint_pause(**mint_fields(2, group="trip", thread_id="thread-1", shown={"call": 2}))
    resume_pause(first.token, "yes")
    resumed = resume_pause(second.token, "yes")
    now = {first.claims.jti: {"call": 1}, second.claims.jti: {"call": 2, "changed": True}}
    runs: list[Continuation] = []

    result = continue_once(resumed, runs.append, still_shown=lambda member: now[member.claims.jti])

    assert not result.ran and runs == []
    assert result.reason is not None and second.claims.jti in result.reason
    assert {p.jti for p in Pause.objects.continuation_failed()} == {first.claims.jti, second.claims.jti}
    assert set(Pause.objects.in_failed_group(timezone.now())) == set(Pause.objects.all())


@pytest.mark.django_db(transaction=True)
async def test_acontinue_once_awaits_an_async_still_shown_and_refuses_a_changed_question() -> None:
    minted = await amint(shown=SHOWN)
    resumed = await aresume_pause(minted.token, "yes")
    runs: list[Continuation] = []

    async def still_shown(member: ResumedPause) -> Any:
        return {"changed": True}

    result = await acontinue_once(resumed, runs.append, still_shown=still_shown)
    assert not result.ran and runs == []
    assert result.reason is not None and "the question changed since it was asked" in result.reason

    unchanged = await aresume_pause((await amint(shown=SHOWN)).token, "yes")

    async def same(member: ResumedPause) -> Any:
        return SHOWN

    assert (await acontinue_once(unchanged, lambda continuation: "ran", still_shown=same)).output == "ran"


def test_the_check_adds_one_read_and_is_asked_after_the_claim() -> None:
    """The digest is read with the pause's row, once, after the claim (which reads nothing): one
    statement more than ``test_statements_per_continuation``; ``still_shown`` runs once the
    continuation is claimed."""
    resumed = resume_pause(mint(shown=SHOWN).token, "yes")
    claimed: list[str] = []

    def still_shown(member: ResumedPause) -> Any:
        claimed.append(member.claims.jti)
        return SHOWN

    with CaptureQueriesContext(connection) as continuing:
        assert continue_once(resumed, lambda continuation: None, still_shown=still_shown).ran
    assert len(data_statements(continuing)) == STATEMENTS_PER_CONTINUATION + 1, data_statements(continuing)
    assert claimed == [resumed.claims.jti]
    assert Pause.objects.get(jti=resumed.claims.jti).continuation == ContinuationState.CONTINUED
