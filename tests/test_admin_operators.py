"""The admin as an operator reads it: no full counts on the uncounted lists, a pause with its
question, answer and rows, rows linking back to their pause, values readable and bounded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tests.factories import CheckpointMetadataFactory
from tests.pause_helpers import answered, legacy_request, lost, mint
from turnstate_app.admin import VALUE_PREVIEW_CHARS, CheckpointMetadataAdmin, UnresumablePauseAdmin
from turnstate_app.models import CheckpointMetadata, Pause

pytestmark = pytest.mark.django_db

UNCOUNTED = [
    reverse("admin:turnstate_app_unresumablepause_changelist"),
    reverse("admin:turnstate_app_checkpointmetadata_changelist"),
]


def pause_page(jti: str) -> str:
    return reverse("admin:turnstate_app_pause_change", args=[Pause.objects.get(jti=jti).pk])


def row_page(row: CheckpointMetadata) -> str:
    return reverse("admin:turnstate_app_checkpointmetadata_change", args=[row.pk])


@pytest.mark.parametrize("url", UNCOUNTED)
def test_the_uncounted_lists_offer_no_counts_and_ignore_a_request_for_them(
    admin_client: Client, django_assert_num_queries: Any, url: str
) -> None:
    for n in range(3):
        lost(n)
        legacy_request(n)
    admin_client.get(url)  # warm the session

    # The unresumable list asks first where its rows start (the oldest request row of a stranded pause).
    with django_assert_num_queries(4 if url == UNCOUNTED[0] else 3):
        response = admin_client.get(url, {"_facets": "True"})

    assert response.status_code == 200
    assert b"Show counts" not in response.content and b"Hide counts" not in response.content


@pytest.mark.parametrize(
    ("url", "admin_class", "query"),
    [
        *((UNCOUNTED[0], UnresumablePauseAdmin, query) for query in ({}, {"q": "legacy-1"})),
        *(
            (UNCOUNTED[1], CheckpointMetadataAdmin, query)
            for query in ({}, {"q": "legacy-1"}, {"q": "shared"})
        ),
    ],
)
def test_an_uncounted_list_never_calls_the_rows_of_a_page_a_total(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch, url: str, admin_class: Any, query: dict[str, str]
) -> None:
    monkeypatch.setattr(admin_class, "list_per_page", 2)
    for n in range(5):
        legacy_request(n)
        legacy_request(10 + n, thread_id="shared")  # a search that matches more than a page
    response = admin_client.get(url, query)
    html = response.content.decode()
    search_bar = html.split('id="changelist-search"', 1)[1].split("</form>", 1)[0]
    footer = html.split('class="paginator"', 1)[1].split("</p>", 1)[0]
    assert "result" not in search_bar and "total" not in search_bar  # no "2 results (Show all)"
    assert f"{len(response.context['cl'].result_list)} " in footer
    if query.get("q") != "legacy-1":
        assert "on this page" in footer and 'class="turnstate-next"' in footer


def test_help_text_with_angle_brackets_is_shown_not_eaten(admin_client: Client) -> None:
    row = CheckpointMetadata.objects.get(key="ask_user_request:call-1") if mint(1) else None
    assert row is not None
    html = admin_client.get(row_page(row)).content.decode()
    assert "ask_user_request:&lt;tool_call_id&gt; or turn_state:&lt;jti&gt;" in html


def test_a_pause_page_shows_its_question_its_answer_and_links_to_its_rows(admin_client: Client) -> None:
    minted = answered(1, request={"question": "Which date?", "options": ["May 4", "May 11"]})
    html = admin_client.get(pause_page(minted.claims.jti)).content.decode()

    assert "&quot;question&quot;: &quot;Which date?&quot;" in html  # pretty-printed, escaped
    assert '"options": [\n' in html.replace("&quot;", '"')
    assert "&quot;a&quot;: 1" in html  # the answer
    rows = CheckpointMetadata.objects.filter(thread_id="thread-1")
    assert rows.count() == 3
    for row in rows:
        assert f'href="{row_page(row)}"' in html, row.key


def test_a_pending_pause_page_says_it_is_not_answered_yet(admin_client: Client) -> None:
    minted = mint(2, request={"q": 2})
    html = admin_client.get(pause_page(minted.claims.jti)).content.decode()
    assert "&quot;q&quot;: 2" in html
    assert "not answered yet" in html


@pytest.mark.parametrize("prefix", ["ask_user_request:", "turn_state:", "answer:"])
def test_a_row_links_back_to_its_pause(admin_client: Client, prefix: str) -> None:
    minted = answered(3)
    row = CheckpointMetadata.objects.get(thread_id="thread-3", key__startswith=prefix)
    html = admin_client.get(row_page(row)).content.decode()
    assert f'href="{pause_page(minted.claims.jti)}"' in html


def test_a_row_no_pause_owns_says_so(admin_client: Client) -> None:
    legacy_request(4)
    row = CheckpointMetadata.objects.get(thread_id="legacy-4")
    html = admin_client.get(row_page(row)).content.decode()
    assert "no ledger pause" in html


def test_a_value_is_pretty_printed_json(admin_client: Client) -> None:
    mint(5, request={"question": "Lisbon?", "nested": {"deep": [1, 2]}})
    row = CheckpointMetadata.objects.get(key="ask_user_request:call-5")
    html = admin_client.get(row_page(row)).content.decode().replace("&quot;", '"')
    assert '<pre class="turnstate-value">{\n  "question": "Lisbon?",\n  "nested": {\n    "deep": [' in html


def test_a_big_value_is_truncated_with_a_link_to_the_whole(admin_client: Client) -> None:
    big = {"transcript": "x" * (VALUE_PREVIEW_CHARS * 3)}
    row = CheckpointMetadataFactory.create(
        thread_id="t-big", checkpoint_id="cp", key="other:big", value=json.dumps(big)
    )
    html = admin_client.get(row_page(row)).content.decode()
    assert "x" * (VALUE_PREVIEW_CHARS * 2) not in html
    whole = reverse("admin:turnstate_app_checkpointmetadata_value", args=[row.pk])
    assert f'href="{whole}"' in html

    response = admin_client.get(whole)
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    assert json.loads(response.content) == big


def test_the_whole_value_needs_the_view_permission(client: Client) -> None:
    from django.contrib.auth import get_user_model

    row = CheckpointMetadata.objects.create(thread_id="t", checkpoint_id="cp", key="other:k", value="{}")
    staff = get_user_model().objects.create_user("nobody", is_staff=True)
    client.force_login(staff)
    whole = reverse("admin:turnstate_app_checkpointmetadata_value", args=[row.pk])
    assert client.get(whole).status_code == 403


def test_the_pages_bring_the_apps_stylesheet_that_keeps_the_reason_readable(admin_client: Client) -> None:
    from django.contrib.staticfiles import finders

    html = admin_client.get(UNCOUNTED[0]).content.decode()
    assert "turnstate_app/admin.css" in html
    css_path = finders.find("turnstate_app/admin.css")
    assert css_path is not None
    css = Path(str(css_path)).read_text()
    assert "td.field-reason" in css and "min-width" in css
