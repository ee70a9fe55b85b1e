"""The admin: three read-only change lists, the unresumable one first among them."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from tests.factories import UserFactory
from tests.pause_helpers import answered, legacy_request, lost, mint
from turnstate_app.admin import UnresumablePauseAdmin
from turnstate_app.models import UNRESUMABLE_NO_LEDGER, CheckpointMetadata, Pause, UnresumablePause

pytestmark = pytest.mark.django_db

UNRESUMABLE = reverse("admin:turnstate_app_unresumablepause_changelist")
CHANGE_LISTS = [
    UNRESUMABLE,
    reverse("admin:turnstate_app_pause_changelist"),
    reverse("admin:turnstate_app_checkpointmetadata_changelist"),
]
# The session, the user, the page (none counts); on the pauses, which of the page's rows are
# resumable now (the store probed for those rows only).
QUERIES_PER_PAGE = {UNRESUMABLE: 4, CHANGE_LISTS[1]: 4, CHANGE_LISTS[2]: 3}


@pytest.fixture
def both_kinds() -> dict[str, str]:
    resumable = mint(1)
    done = answered(2)
    stranded = lost(3)
    legacy_request(4)
    failed = mint(5, failing=True)
    gone_but_answered = lost(6)
    Pause.objects.filter(jti=gone_but_answered.claims.jti).update(status="answered")
    return {
        "lost": stranded.claims.jti,
        "failed": failed.claims.jti,
        "resumable": resumable.claims.jti,
        "answered": done.claims.jti,
    }


def test_the_unresumable_page_lists_both_kinds_and_nothing_else(
    admin_client: Client, both_kinds: dict[str, str]
) -> None:
    response = admin_client.get(UNRESUMABLE)

    assert response.status_code == 200
    rows = response.context["cl"].result_list
    assert {(row.thread_id, row.jti) for row in rows} == {
        ("thread-3", both_kinds["lost"]),
        ("thread-5", both_kinds["failed"]),
        ("legacy-4", None),
    }
    html = response.content.decode()
    for text in (both_kinds["lost"], both_kinds["failed"], "interrupt_payload:int-4", "no ledger row"):
        assert text in html
    for text in (both_kinds["resumable"], both_kinds["answered"], "thread-6"):
        assert text not in html


def test_the_unresumable_page_lists_newest_first_filters_by_reason_and_finds_a_jti(
    admin_client: Client, both_kinds: dict[str, str]
) -> None:
    CheckpointMetadata.objects.filter(thread_id="legacy-4").update(
        created_at=timezone.now() - timedelta(days=1)
    )
    age_column = str(UnresumablePauseAdmin.list_display.index("age"))  # ?o= counts from 0

    newest_first = admin_client.get(UNRESUMABLE).context["cl"].result_list
    asked_oldest_first = admin_client.get(UNRESUMABLE, {"o": f"-{age_column}"}).context["cl"].result_list
    no_ledger = admin_client.get(UNRESUMABLE, {"reason": "no_ledger"}).context["cl"].result_list
    by_jti = admin_client.get(UNRESUMABLE, {"q": both_kinds["failed"]}).context["cl"].result_list
    by_thread = admin_client.get(UNRESUMABLE, {"q": "thread-3"}).context["cl"].result_list

    assert newest_first[len(newest_first) - 1].thread_id == "legacy-4"
    assert asked_oldest_first == newest_first  # a keyset list keeps its order
    assert [row.thread_id for row in no_ledger] == ["legacy-4"]
    assert [row.thread_id for row in by_jti] == ["thread-5"]
    assert [row.thread_id for row in by_thread] == ["thread-3"]


def page_after(client: Client, url: str, response: Any) -> Any:
    """The page the footer's "Next page" link opens."""
    link = re.search(r'href="(\?[^"]*after=[^"]*)" class="turnstate-next"', response.content.decode())
    assert link is not None, response.content.decode()
    return client.get(url + html.unescape(link.group(1)))


def test_the_unresumable_page_pages_by_keyset_without_counting(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch, django_assert_num_queries: Any
) -> None:
    monkeypatch.setattr(UnresumablePauseAdmin, "list_per_page", 2)
    for n in range(5):
        legacy_request(n)
    CheckpointMetadata.objects.update(
        created_at=timezone.now() - timedelta(hours=1)
    )  # ties: the pk breaks them

    with django_assert_num_queries(4):
        first = admin_client.get(UNRESUMABLE)
    with CaptureQueriesContext(connection) as queries:
        second = page_after(admin_client, UNRESUMABLE, first)
    last = page_after(admin_client, UNRESUMABLE, second)

    pages = [first, second, last]
    seen = [row.thread_id for page in pages for row in page.context["cl"].result_list]
    assert seen == [f"legacy-{n}" for n in (4, 3, 2, 1, 0)]
    assert [page.context["cl"].has_more for page in pages] == [True, True, False]
    assert b"2 unresumable pauses on this page" in first.content and b"First page" not in first.content
    assert b"1 unresumable pause on this page" in last.content and b"Next page" not in last.content
    assert b"First page" in last.content
    assert not any("OFFSET" in query["sql"].upper() for query in queries.captured_queries)
    for cursor in ("x", "2026-01-01T00:00:00~1", "1", "2026-01-01T00:00:00+00:00~" + "9" * 30):
        bad = admin_client.get(UNRESUMABLE, {"after": cursor})
        assert bad.status_code == 302 and bad["Location"].endswith("?e=1"), cursor


def test_an_unresumable_row_opens_read_only(admin_client: Client, both_kinds: dict[str, str]) -> None:
    row = UnresumablePause.objects.get(thread_id="legacy-4")
    response = admin_client.get(reverse("admin:turnstate_app_unresumablepause_change", args=[row.pk]))
    assert response.status_code == 200
    assert b'name="_save"' not in response.content
    assert UNRESUMABLE_NO_LEDGER.encode() in response.content


@pytest.mark.parametrize("rows", [3, 30])
@pytest.mark.parametrize("url", CHANGE_LISTS)
def test_a_change_list_costs_the_same_queries_for_3_rows_as_for_30(
    admin_client: Client, django_assert_num_queries: Any, url: str, rows: int
) -> None:
    owner = UserFactory.create()
    for n in range(rows):
        lost(n, owner=owner)
        legacy_request(n)
    admin_client.get(url)  # warm the session

    with django_assert_num_queries(QUERIES_PER_PAGE[url]):
        response = admin_client.get(url)

    assert response.status_code == 200
    assert response.context["cl"].result_count >= rows


@pytest.mark.parametrize(
    ("url", "query", "expected"),
    [
        (CHANGE_LISTS[1], {"status__exact": "answered"}, {"thread-2", "thread-6"}),
        (CHANGE_LISTS[1], {"resumable__exact": "0"}, {"thread-5"}),
        (CHANGE_LISTS[1], {"age": "gt30d"}, {"thread-1"}),
        (CHANGE_LISTS[1], {"q": "thread-3"}, {"thread-3"}),
        (CHANGE_LISTS[2], {"q": "thread-3"}, {"thread-3"}),
        (CHANGE_LISTS[2], {"kind": "answer"}, {"thread-2"}),
        (CHANGE_LISTS[2], {"age": "1d"}, {f"thread-{n}" for n in (2, 3, 5, 6)} | {"legacy-4"}),
    ],
)
def test_the_ledger_and_the_store_filter_and_search(
    admin_client: Client, both_kinds: dict[str, str], url: str, query: dict[str, str], expected: set[str]
) -> None:
    Pause.objects.filter(thread_id="thread-1").update(created_at="2020-01-01T00:00:00Z")
    CheckpointMetadata.objects.filter(thread_id="thread-1").update(created_at="2020-01-01T00:00:00Z")

    response = admin_client.get(url, query)

    assert response.status_code == 200
    assert {row.thread_id for row in response.context["cl"].result_list} == expected


def test_the_ledger_searches_by_jti(admin_client: Client, both_kinds: dict[str, str]) -> None:
    response = admin_client.get(CHANGE_LISTS[1], {"q": both_kinds["lost"]})
    assert [row.jti for row in response.context["cl"].result_list] == [both_kinds["lost"]]


def test_the_store_searches_a_pause_s_rows_by_its_jti_and_matches_ids_exactly(
    admin_client: Client, both_kinds: dict[str, str]
) -> None:
    """The store's search is by index only: a thread id exactly, or a jti, which finds the rows of
    that pause's checkpoint; a fragment of a key is no search term (it would read the whole store)."""
    pause = Pause.objects.get(jti=both_kinds["lost"])
    expected = set(
        CheckpointMetadata.objects.filter(
            thread_id=pause.thread_id, checkpoint_id=pause.checkpoint_id
        ).values_list("pk", flat=True)
    )

    by_jti = admin_client.get(CHANGE_LISTS[2], {"q": pause.jti})
    by_fragment = admin_client.get(CHANGE_LISTS[2], {"q": pause.request_key[:-3]})

    assert expected
    assert {row.pk for row in by_jti.context["cl"].result_list} == expected
    assert list(by_fragment.context["cl"].result_list) == []


@pytest.mark.parametrize("model", ["unresumablepause", "pause", "checkpointmetadata"])
def test_not_even_a_superuser_may_add_change_or_delete(
    admin_client: Client, both_kinds: dict[str, str], model: str
) -> None:
    obj = (
        UnresumablePause if model == "unresumablepause" else Pause if model == "pause" else CheckpointMetadata
    )
    pk = obj.objects.order_by("pk").values_list("pk", flat=True)[0]
    changelist = admin_client.get(reverse(f"admin:turnstate_app_{model}_changelist"))
    change = reverse(f"admin:turnstate_app_{model}_change", args=[pk])
    delete = reverse(f"admin:turnstate_app_{model}_delete", args=[pk])

    assert changelist.status_code == 200
    add = reverse(f"admin:turnstate_app_{model}_add")
    assert add.encode() not in changelist.content and b'name="action"' not in changelist.content
    assert admin_client.get(add).status_code == 403
    assert b'name="_save"' not in admin_client.get(change).content
    assert admin_client.post(change, {"thread_id": "x"}).status_code == 403
    assert admin_client.get(delete).status_code == 403
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    assert obj.objects.filter(pk=pk).exists()


def test_staff_with_view_permission_look_but_cannot_touch(
    both_kinds: dict[str, str], staff_client: Callable[..., Client]
) -> None:
    client = staff_client("view_unresumablepause", "view_pause", "view_checkpointmetadata")
    for url in CHANGE_LISTS:
        assert client.get(url).status_code == 200
    pk = Pause.objects.values_list("pk", flat=True)[0]
    change = reverse("admin:turnstate_app_pause_change", args=[pk])
    assert b'name="_save"' not in client.get(change).content
    assert client.post(change, {"status": "pending"}).status_code == 403
    assert client.get(reverse("admin:turnstate_app_pause_add")).status_code == 403


def test_staff_without_permission_see_nothing(
    both_kinds: dict[str, str], staff_client: Callable[..., Client]
) -> None:
    client = staff_client()
    for url in CHANGE_LISTS:
        assert client.get(url).status_code == 403


def test_staff_holding_every_permission_still_only_look(
    both_kinds: dict[str, str], staff_client: Callable[..., Client]
) -> None:
    client = staff_client("change_pause", "add_pause", "delete_pause")
    pk = Pause.objects.values_list("pk", flat=True)[0]
    assert client.get(CHANGE_LISTS[1]).status_code == 200  # Django reads change permission as view permission
    assert client.get(reverse("admin:turnstate_app_pause_add")).status_code == 403
    assert client.post(reverse("admin:turnstate_app_pause_change", args=[pk]), {}).status_code == 403
    assert (
        client.post(reverse("admin:turnstate_app_pause_delete", args=[pk]), {"post": "yes"}).status_code
        == 403
    )
    assert Pause.objects.filter(pk=pk).exists()


def row_cells(page: str, jti: str) -> dict[str, str]:
    """The cells of the change list row of pause ``jti``, by column (``field-<name>``)."""
    [row] = [chunk for chunk in page.split("<tr")[1:] if f'title="{jti}"' in chunk]
    return dict(re.findall(r'<t[dh] class="field-([a-z_]+)[^"]*">(.*?)</t[dh]>', row, re.S))


def test_the_pause_list_says_what_holds_now_and_what_was_recorded_at_pause(
    admin_client: Client, both_kinds: dict[str, str]
) -> None:
    overdue = mint(7)
    Pause.objects.filter(jti=overdue.claims.jti).update(expires_at="2020-01-01T00:00:00Z")
    unresumable = {row.jti for row in UnresumablePause.objects.all()}

    response = admin_client.get(CHANGE_LISTS[1])

    page = response.content.decode()
    head = page.split("<tbody", 1)[0]
    assert "State recorded at pause" in head and "Resumable now" in head
    now = {
        jti: 'alt="True"' in row_cells(page, jti)["resumable_now"]
        for jti in (*both_kinds.values(), overdue.claims.jti)
    }
    recorded = {
        jti: 'alt="True"' in row_cells(page, jti)["recorded_at_pause"]
        for jti in (both_kinds["lost"], both_kinds["failed"])
    }
    assert now == {
        both_kinds["resumable"]: True,
        both_kinds["lost"]: False,  # listed as unresumable, though its state was recorded at pause
        both_kinds["failed"]: False,
        both_kinds["answered"]: False,
        overdue.claims.jti: False,  # past its age: no answer can resume it
    }
    assert recorded == {both_kinds["lost"]: True, both_kinds["failed"]: False}
    assert not any(now.get(jti, False) for jti in unresumable if jti is not None)


def test_a_pause_page_labels_what_was_recorded_and_what_holds_now(
    admin_client: Client, both_kinds: dict[str, str]
) -> None:
    pk = Pause.objects.get(jti=both_kinds["lost"]).pk
    page = admin_client.get(reverse("admin:turnstate_app_pause_change", args=[pk])).content.decode()
    now = page.split('class="form-row field-resumable_now', 1)[1].split("</div>", 3)
    recorded = page.split('class="form-row field-recorded_at_pause', 1)[1].split("</div>", 3)
    assert "Resumable now" in now[0] + now[1] + now[2] and 'alt="False"' in "".join(now)
    assert "State recorded at pause" in "".join(recorded) and 'alt="True"' in "".join(recorded)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"resumable_now": "1"}, {"thread-1"}),
        ({"resumable_now": "0"}, {"thread-2", "thread-3", "thread-5", "thread-6"}),
        ({"thread_id": "thread-3"}, {"thread-3"}),
        ({"thread_id": "thread-3", "checkpoint_id": "nowhere"}, set()),
    ],
)
def test_the_pause_list_filters_by_what_holds_now_and_by_thread_and_checkpoint(
    admin_client: Client, both_kinds: dict[str, str], query: dict[str, str], expected: set[str]
) -> None:
    response = admin_client.get(CHANGE_LISTS[1], query)
    assert response.status_code == 200, response.get("Location")
    assert {row.thread_id for row in response.context["cl"].result_list} == expected


def test_the_pause_list_filters_by_a_thread_and_its_checkpoint(
    admin_client: Client, both_kinds: dict[str, str]
) -> None:
    pause = Pause.objects.get(jti=both_kinds["lost"])
    query = {"thread_id": pause.thread_id, "checkpoint_id": pause.checkpoint_id}
    response = admin_client.get(CHANGE_LISTS[1], query)
    assert response.status_code == 200, response.get("Location")
    assert [row.jti for row in response.context["cl"].result_list] == [pause.jti]
