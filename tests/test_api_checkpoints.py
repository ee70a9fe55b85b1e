"""GET checkpoints/, checkpoints/<id>/ and pauses/unresumable/: the operators' endpoints."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from tests.api_support import CHECKPOINTS, UNRESUMABLE, checkpoint_url, request_row, walk
from tests.pause_helpers import legacy_request, lose_turn_state, mint
from turnstate_app.models import CheckpointMetadata, UnresumablePause
from turnstate_app.pauses import resume_pause
from turnstate_app.ports import ModelCheckpointCommandPort

pytestmark = pytest.mark.django_db


def write(key: str, *, thread_id: str = "t", checkpoint_id: str = "c", value: str = "{}") -> None:
    ModelCheckpointCommandPort().write_metadata_sync(
        thread_id=thread_id, checkpoint_id=checkpoint_id, key=key, value=value, task_id=None
    )


def keys(client: APIClient, query: dict[str, str]) -> set[str]:
    response = client.get(CHECKPOINTS, query)
    assert response.status_code == 200, response.content
    return {row["key"] for row in response.json()["results"]}


def test_the_list_never_carries_values_and_the_detail_does(staff: APIClient) -> None:
    minted = mint()
    rows = staff.get(CHECKPOINTS).json()["results"]
    assert {row["kind"] for row in rows} == {"request", "turn_state"}
    assert all("value" not in row for row in rows)
    assert set(rows[0]) == {
        "id",
        "thread_id",
        "checkpoint_id",
        "key",
        "kind",
        "task_id",
        "created_at",
        "updated_at",
    }
    detail = staff.get(checkpoint_url(request_row(minted).pk)).json()
    assert detail["value"] == '{"question":"Which date?"}'
    assert detail["key"] == f"ask_user_request:{minted.claims.tool_call_id}"


def test_the_list_does_not_even_read_values(staff: APIClient) -> None:
    write("k", value="v" * 10_000)
    with CaptureQueriesContext(connection) as queries:
        staff.get(CHECKPOINTS)
    listing = [q["sql"] for q in queries.captured_queries if "turnstate_app_checkpointmetadata" in q["sql"]]
    assert len(listing) == 1 and '"value"' not in listing[0].replace("`", '"')


def test_a_missing_row_is_404(staff: APIClient) -> None:
    response = staff.get(checkpoint_url(999_999))
    assert (response.status_code, response.json()["code"]) == (404, "not_found")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"thread_id": "t1"}, {"a:1", "b:1"}),
        ({"checkpoint_id": "c2"}, {"a:2"}),
        ({"thread_id": "t1", "checkpoint_id": "c1"}, {"a:1", "b:1"}),
        ({"thread_id": "T1"}, set()),
        ({"thread_id": "t1 "}, set()),  # no trailing-space folding (MariaDB's PAD collations)
    ],
)
def test_checkpoint_id_filters(staff: APIClient, query: dict[str, str], expected: set[str]) -> None:
    write("a:1", thread_id="t1", checkpoint_id="c1")
    write("b:1", thread_id="t1", checkpoint_id="c1")
    write("a:2", thread_id="t2", checkpoint_id="c2")
    assert keys(staff, query) == expected


KEYS = (
    "ask_user_request:a",
    "ASK_USER_REQUEST:b",
    "Ask_user_request:c",
    "ask%user:d",
    "askXuser:e",
    "ask_user:f",
    "ask_user_request:é",
    "ask_user_request:😀",
    "ask_user_requestX",
    "ask",
    "ask ",
    "100%_sure",
    "1000_sure",
)


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        (
            "ask_user",
            {"ask_user_request:a", "ask_user:f", "ask_user_request:é", "ask_user_request:😀"}
            | {"ask_user_requestX"},
        ),
        ("ask_user_request:", {"ask_user_request:a", "ask_user_request:é", "ask_user_request:😀"}),
        ("ASK", {"ASK_USER_REQUEST:b"}),  # case-sensitive, SQLite included
        ("Ask", {"Ask_user_request:c"}),
        ("ask%", {"ask%user:d"}),  # % is not a wildcard
        (
            "ask_",
            {"ask_user_request:a", "ask_user:f", "ask_user_request:é", "ask_user_request:😀"}
            | {"ask_user_requestX"},
        ),  # _ is not a wildcard: askXuser is not matched
        ("100%", {"100%_sure"}),
        ("100", {"100%_sure", "1000_sure"}),
        ("ask ", {"ask "}),  # trailing space counts
        ("ask_user_request:é", {"ask_user_request:é"}),
        ("ask_user_request:😀", {"ask_user_request:😀"}),
        ("ask_user_request:e", set()),  # é is not e
        ("ask_user_request:a-and-more", set()),  # longer than the key
        ("%", set()),
        ("_", set()),
    ],
)
def test_key_prefix_is_literal_and_case_sensitive(staff: APIClient, prefix: str, expected: set[str]) -> None:
    for key in KEYS:
        write(key)
    assert keys(staff, {"key_prefix": prefix}) == expected


@pytest.mark.parametrize("rows", [5, 50])
def test_checkpoint_list_costs_one_query_whatever_the_page_holds(users: dict[str, Any], rows: int) -> None:
    for n in range(rows):
        write(f"k:{n}")
    client = APIClient()
    client.force_authenticate(users["staff"])
    with CaptureQueriesContext(connection) as queries:
        response = client.get(CHECKPOINTS, {"page_size": "50", "key_prefix": "k:"})
    assert len(response.json()["results"]) == rows
    assert len(queries.captured_queries) == 1


def test_checkpoint_pages_cover_every_row_once(staff: APIClient) -> None:
    for n in range(11):
        write(f"k:{n}")
    assert sorted(row["key"] for row in walk(staff, f"{CHECKPOINTS}?page_size=3")) == sorted(
        f"k:{n}" for n in range(11)
    )


# -- unresumable --------------------------------------------------------------------------


def test_unresumable_lists_the_same_rows_as_the_admin_page(staff: APIClient) -> None:
    mint()  # resumable: not listed
    answered = mint()
    resume_pause(answered.token, "x")
    lost = mint()
    lose_turn_state(lost)
    legacy = legacy_request(thread_id="legacy-thread")
    rows = walk(staff, f"{UNRESUMABLE}?page_size=1")
    expected = {(row.pk, row.jti, row.reason) for row in UnresumablePause.objects.all()}
    assert {(row["id"], row["jti"], row["reason"]) for row in rows} == expected
    assert {row["jti"] for row in rows} == {lost.claims.jti, None}
    assert {row["thread_id"] for row in rows} == {lost.claims.thread_id, legacy.thread_id}
    assert set(rows[0]) == {"id", "thread_id", "checkpoint_id", "key", "jti", "reason", "created_at"}


@pytest.mark.parametrize("rows", [5, 50])
def test_unresumable_costs_two_queries_whatever_the_page_holds(users: dict[str, Any], rows: int) -> None:
    """Where the rows start (the oldest request row of a stranded pause), then the page."""
    for n in range(rows):
        legacy_request(n)
    client = APIClient()
    client.force_authenticate(users["staff"])
    with CaptureQueriesContext(connection) as queries:
        response = client.get(UNRESUMABLE, {"page_size": "50"})
    assert len(response.json()["results"]) == rows
    assert len(queries.captured_queries) == 2


def test_unresumable_ignores_pause_filters(staff: APIClient) -> None:
    legacy_request(thread_id="legacy-thread")
    assert len(staff.get(UNRESUMABLE, {"status": "answered"}).json()["results"]) == 1


def test_checkpoint_rows_are_listed_in_creation_order(staff: APIClient) -> None:
    for n in range(3):
        write(f"k:{n}")
    ids = list(CheckpointMetadata.objects.order_by("created_at", "id").values_list("id", flat=True))
    assert [row["id"] for row in staff.get(CHECKPOINTS).json()["results"]] == ids
