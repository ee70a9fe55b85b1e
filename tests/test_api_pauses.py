"""GET pauses/, GET pauses/<jti>/ and POST pauses/resume/: content, filters, pages, every status."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from tests.api_support import PAUSES, RESUME, client_for, pause_url, snapshot, walk
from tests.factories import PauseFactory
from tests.pause_helpers import lose_turn_state, mint
from turnstate_app.checkpoints import answer_key
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.turnstate import turn_state_key

pytestmark = pytest.mark.django_db


# -- list and detail ----------------------------------------------------------------------


def test_detail_is_the_ledger_row_without_transcript(users: dict[str, Any]) -> None:
    minted = mint(owner=users["owner"], prompt="SECRET PROMPT")
    body = client_for(users["owner"]).get(pause_url(minted.claims.jti)).json()
    assert body["jti"] == minted.claims.jti
    assert body["thread_id"] == minted.claims.thread_id
    assert body["request_key"] == f"ask_user_request:{minted.claims.tool_call_id}"
    assert (body["status"], body["resumable"], body["owner"]) == ("pending", True, users["owner"].pk)
    assert body["answered_at"] is None and body["handed_off_at"] is None
    assert body["continuation"] is None  # nothing to continue before an answer
    assert "SECRET" not in json.dumps(body)
    assert not {"prompt", "messages", "token"} & set(body)


def test_detail_and_list_carry_the_question_for_whoever_may_see_the_pause(users: dict[str, Any]) -> None:
    question = {"question": "Which date?", "options": ["May 4", "May 11"], "note": "é 😀"}
    minted = mint(owner=users["owner"], request=question)
    for who in ("owner", "staff"):
        client = client_for(users[who])
        assert client.get(pause_url(minted.claims.jti)).json()["request"] == question
        assert [row["request"] for row in client.get(PAUSES).json()["results"]] == [question]
    assert client_for(users["other"]).get(pause_url(minted.claims.jti)).status_code == 404
    assert client_for(users["other"]).get(PAUSES).json()["results"] == []


def test_a_pause_whose_request_row_is_gone_or_unreadable_reads_null(staff: APIClient) -> None:
    gone = PauseFactory.create()
    unreadable = mint()
    CheckpointMetadata.objects.filter(key=f"ask_user_request:{unreadable.claims.tool_call_id}").update(
        value="{not json"
    )
    assert staff.get(pause_url(gone.jti)).json()["request"] is None
    assert staff.get(pause_url(unreadable.claims.jti)).json()["request"] is None


def test_a_pending_pause_past_its_age_reads_expired(staff: APIClient) -> None:
    old = PauseFactory.create(expires_at=timezone.now() - timedelta(seconds=1))
    assert staff.get(pause_url(old.jti)).json()["status"] == "expired"
    assert Pause.objects.get(jti=old.jti).status == "pending"  # reading changes nothing


def test_list_is_ordered_by_created_at_then_id(staff: APIClient) -> None:
    rows = [PauseFactory.create() for _ in range(3)]
    same_instant = timezone.now()
    Pause.objects.filter(pk__in=[rows[1].pk, rows[2].pk]).update(created_at=same_instant)
    jtis = [row["jti"] for row in staff.get(PAUSES).json()["results"]]
    assert jtis == [rows[0].jti, rows[1].jti, rows[2].jti]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status=pending", {"fresh", "lost"}),
        ("status=answered", {"answered"}),
        ("status=expired", {"old", "marked"}),
        ("resumable=false", {"lost"}),
        ("resumable=true", {"fresh", "answered", "old", "marked"}),
        ("thread_id=t-fresh", {"fresh"}),
        ("session_id=s-2", {"answered", "old"}),
        ("run_id=r-marked", {"marked"}),
        ("group=g-1", {"fresh", "answered"}),
        ("group=g-1&status=answered", {"answered"}),
        ("group=G-1", set()),  # a group is an exact id too
        ("status=expired&session_id=s-2", {"old"}),
        ("thread_id=T-FRESH", set()),  # ids are exact, case included
        ("thread_id=", {"fresh", "lost", "answered", "old", "marked"}),  # empty: no filter
    ],
)
def test_pause_filters(staff: APIClient, query: str, expected: set[str]) -> None:
    past = timezone.now() - timedelta(seconds=1)
    pauses: dict[str, dict[str, Any]] = {
        "fresh": {"group": "g-1"},
        "lost": {"resumable": False, "group": "g-2"},
        "answered": {"status": "answered", "session_id": "s-2", "group": "g-1"},
        "old": {"expires_at": past, "session_id": "s-2"},
        "marked": {"status": "expired"},
    }
    for name, fields in pauses.items():
        PauseFactory.create(jti=name, thread_id=f"t-{name}", run_id=f"r-{name}", **fields)
    response = staff.get(f"{PAUSES}?{query}")
    assert response.status_code == 200, response.content
    assert {row["jti"] for row in response.json()["results"]} == expected


def test_filters_apply_within_what_the_user_may_see(users: dict[str, Any]) -> None:
    PauseFactory.create(jti="mine", thread_id="t", owner=users["owner"])
    PauseFactory.create(jti="theirs", thread_id="t", owner=users["other"])
    results = client_for(users["owner"]).get(f"{PAUSES}?thread_id=t").json()["results"]
    assert [row["jti"] for row in results] == ["mine"]


def test_unicode_ids_filter_exactly(staff: APIClient) -> None:
    PauseFactory.create(jti="u", thread_id="スレッド-😀")
    PauseFactory.create(jti="v", thread_id="スレッド-😁")
    results = staff.get(PAUSES, {"thread_id": "スレッド-😀"}).json()["results"]
    assert [row["jti"] for row in results] == ["u"]


# -- pagination ---------------------------------------------------------------------------


def test_walking_every_page_while_rows_are_added_has_no_duplicates_or_gaps(staff: APIClient) -> None:
    before = {PauseFactory.create().jti for _ in range(23)}
    added: set[str] = set()
    seen: list[str] = []
    next_url: str | None = f"{PAUSES}?page_size=5"
    while next_url:
        page = staff.get(next_url).json()
        assert len(page["results"]) <= 5
        seen += [row["jti"] for row in page["results"]]
        if len(added) < 6:
            added |= {PauseFactory.create().jti, PauseFactory.create().jti}  # land after the cursor
        next_url = page["next"]
    assert len(seen) == len(set(seen)), "duplicates"
    assert set(seen) == before | added, "gaps"


def test_pages_walk_back_through_previous(staff: APIClient) -> None:
    jtis = [PauseFactory.create().jti for _ in range(12)]
    forward = staff.get(f"{PAUSES}?page_size=5").json()
    forward = staff.get(forward["next"]).json()
    last = staff.get(forward["next"]).json()
    assert [row["jti"] for row in last["results"]] == jtis[10:]
    assert last["next"] is None
    back = staff.get(last["previous"]).json()
    assert [row["jti"] for row in back["results"]] == jtis[5:10]
    first = staff.get(back["previous"]).json()
    assert [row["jti"] for row in first["results"]] == jtis[:5] and first["previous"] is None


def test_rows_sharing_a_timestamp_are_neither_repeated_nor_skipped(staff: APIClient) -> None:
    jtis = {PauseFactory.create().jti for _ in range(13)}
    Pause.objects.update(created_at=timezone.now())
    seen = [row["jti"] for row in walk(staff, f"{PAUSES}?page_size=4")]
    assert sorted(seen) == sorted(jtis)


def test_page_size_default_and_cap(staff: APIClient) -> None:
    for _ in range(3):
        PauseFactory.create()
    assert len(staff.get(f"{PAUSES}?page_size=2").json()["results"]) == 2
    assert len(staff.get(f"{PAUSES}?page_size=200").json()["results"]) == 3
    assert staff.get(f"{PAUSES}?page_size=201").status_code == 400
    body = staff.get(PAUSES).json()
    assert set(body) == {"next", "previous", "results"}


@pytest.mark.parametrize("rows", [5, 50])
def test_list_costs_one_query_whatever_the_page_holds(users: dict[str, Any], rows: int) -> None:
    for n in range(rows):
        if n % 5:
            PauseFactory.create(owner=users["owner"])
        else:
            mint(owner=users["owner"])  # with a request row for the page to read
    for who in ("staff", "owner"):
        client = APIClient()
        client.force_authenticate(users[who])  # no session lookups: only the list's own queries
        with CaptureQueriesContext(connection) as queries:
            response = client.get(f"{PAUSES}?page_size=50&status=pending")
        assert len(response.json()["results"]) == rows
        assert sum(row["request"] is not None for row in response.json()["results"]) == rows // 5
        assert len(queries.captured_queries) == 1, [q["sql"] for q in queries.captured_queries]


# -- resume -------------------------------------------------------------------------------


def resume(client: APIClient, token: Any, answer: Any = "May 3rd") -> Any:
    return client.post(RESUME, {"token": token, "answer": answer}, format="json")


def test_resume_answers_once_and_says_whether_the_turn_can_continue(users: dict[str, Any]) -> None:
    minted = mint(owner=users["owner"])
    client = client_for(users["owner"])
    response = resume(client, minted.token, {"date": "2027-05-03", "seats": [1, 2]})
    assert response.status_code == 200
    assert response.json() == {"jti": minted.claims.jti, "status": "answered", "resumable": True}
    stored = CheckpointMetadata.objects.get(key=answer_key(minted.claims)).value
    assert json.loads(stored) == {"date": "2027-05-03", "seats": [1, 2]}
    detail = client.get(pause_url(minted.claims.jti)).json()
    assert (detail["status"], detail["continuation"]) == ("answered", "queued")

    again = resume(client, minted.token, "changed my mind")
    assert (again.status_code, again.json()["code"]) == (409, "already_answered")


def test_resume_without_a_turn_state_is_answered_but_not_resumable(users: dict[str, Any]) -> None:
    minted = mint(owner=users["owner"])
    lose_turn_state(minted)
    response = resume(client_for(users["owner"]), minted.token)
    assert response.status_code == 200
    assert response.json()["resumable"] is False
    assert Pause.objects.get(jti=minted.claims.jti).resumable is True  # as earned at mint


@pytest.mark.parametrize("answer", [None, 0, "", [], {}, "é😀", {"nested": {"deep": [True, None]}}])
def test_any_json_value_is_an_answer(users: dict[str, Any], answer: Any) -> None:
    minted = mint()
    assert resume(client_for(users["other"]), minted.token, answer).status_code == 200
    assert json.loads(CheckpointMetadata.objects.get(key=answer_key(minted.claims)).value) == answer


def assert_refused(response: Any, status: int, code: str, before: Any) -> None:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    assert response.json()["code"] == code
    assert snapshot() == before, "a refused resume wrote something"


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t[:-2] + ("AA" if not t.endswith("AA") else "BB"),
        lambda t: t[: len(t) // 2],
        lambda t: t + "x",
        lambda t: "garbage",
        lambda t: "é" * 100,
        lambda t: "a" * 1_000_000,
        lambda t: " " + t,
    ],
    ids=["flipped", "truncated", "extended", "garbage", "unicode", "1MB", "leading-space"],
)
def test_a_bad_token_is_invalid_token(users: dict[str, Any], mangle: Any) -> None:
    minted = mint(owner=users["owner"])
    before = snapshot()
    response = resume(client_for(users["owner"]), mangle(minted.token))
    assert_refused(response, 400, "invalid_token", before)
    assert "tamper" not in response.content.decode().lower()


def test_another_turns_record_is_record_mismatch_not_invalid_token(users: dict[str, Any]) -> None:
    minted = mint(owner=users["owner"])
    row = CheckpointMetadata.objects.get(key=turn_state_key(minted.claims))
    document = json.loads(row.value)
    document["run_id"] = "someone-elses-run"
    row.value = json.dumps(document)
    row.save()
    before = snapshot()
    response = resume(client_for(users["owner"]), minted.token)
    assert_refused(response, 400, "record_mismatch", before)
    assert "tamper" not in response.content.decode().lower()


def test_an_unreadable_record_is_record_mismatch(users: dict[str, Any]) -> None:
    minted = mint()
    CheckpointMetadata.objects.filter(key=turn_state_key(minted.claims)).update(value="{not json")
    before = snapshot()
    assert_refused(resume(client_for(users["owner"]), minted.token), 400, "record_mismatch", before)


def test_not_the_owner_is_403(users: dict[str, Any]) -> None:
    minted = mint(owner=users["owner"])
    before = snapshot()
    assert_refused(resume(client_for(users["other"]), minted.token), 403, "permission_denied", before)


def test_no_ledger_row_is_404(users: dict[str, Any]) -> None:
    minted = mint()
    Pause.objects.all().delete()
    before = snapshot()
    assert_refused(resume(client_for(users["owner"]), minted.token), 404, "not_found", before)


def test_nothing_stored_is_404(users: dict[str, Any]) -> None:
    minted = mint()
    CheckpointMetadata.objects.all().delete()
    before = snapshot()
    assert_refused(resume(client_for(users["owner"]), minted.token), 404, "not_found", before)


def test_an_expired_pause_is_410_and_stays_expired(users: dict[str, Any]) -> None:
    minted = mint(owner=users["owner"])
    Pause.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    client = client_for(users["owner"])
    response = resume(client, minted.token)
    assert (response.status_code, response.json()["code"]) == (410, "expired")
    assert Pause.objects.get().status == "expired"
    assert not CheckpointMetadata.objects.filter(key=answer_key(minted.claims)).exists()
    assert resume(client, minted.token).status_code == 410


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"answer": "x"}, "token"),
        ({"token": "t"}, "answer"),
        ({"token": ["t"], "answer": "x"}, "token"),
        ({"token": "", "answer": "x"}, "token"),
        ({"token": "a\x00b", "answer": "x"}, "token"),
        ([1, 2], "non_field_errors"),
        ("just a string", "non_field_errors"),
    ],
)
def test_a_wrong_body_is_field_errors(users: dict[str, Any], body: Any, field: str) -> None:
    mint()
    before = snapshot()
    response = client_for(users["owner"]).post(RESUME, body, format="json")
    assert response.status_code == 400
    assert field in response.json() and isinstance(response.json()[field], list)
    assert snapshot() == before


def test_an_oversize_answer_is_a_field_error_on_answer(
    users: dict[str, Any], turnstate_settings: dict[str, Any]
) -> None:
    turnstate_settings["MAX_VALUE_BYTES"] = 4096
    minted = mint()
    before = snapshot()
    response = resume(client_for(users["owner"]), minted.token, "x" * 5000)
    assert response.status_code == 400
    assert "MAX_VALUE_BYTES" in response.json()["answer"][0]
    assert snapshot() == before
