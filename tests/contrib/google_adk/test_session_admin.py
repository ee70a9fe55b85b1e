"""The sessions and events pages: read-only, a list costs the same queries at any size, and a row
changed at rest is shown as unreadable, never as its value."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tests.contrib.google_adk.test_session import T0, event
from tests.contrib.raw_edits import raw_update
from turnstate_app.contrib.google_adk import DjangoSessionService
from turnstate_app.contrib.google_adk.models import StoredEvent, StoredSession

pytestmark = pytest.mark.django_db

SESSIONS = "/admin/turnstate_google_adk/storedsession/"
EVENTS = "/admin/turnstate_google_adk/storedevent/"


def sessions(first: int, n: int, *, events: int = 2) -> None:
    service = DjangoSessionService()
    for i in range(first, first + n):
        session = service.create_session_sync(
            app_name="admin-app", user_id="ann", session_id=f"s{i}", state={"topic": f"topic {i}"}, now=T0
        )
        for e in range(1, events + 1):
            session.last_update_time = service.store_event_sync(session, event(e, {"step": e}))


@pytest.mark.parametrize("url", [SESSIONS, EVENTS])
def test_a_list_page_costs_the_same_queries_at_two_sizes(admin_client: Client, url: str) -> None:
    sessions(0, 2)
    with CaptureQueriesContext(connection) as small:
        response = admin_client.get(url)
    assert response.status_code == 200
    sessions(2, 6)
    with CaptureQueriesContext(connection) as large:
        response = admin_client.get(url)
    assert len(response.context["cl"].result_list) == (8 if url == SESSIONS else 16)
    assert len(large.captured_queries) == len(small.captured_queries)
    if url == SESSIONS:
        assert {row.events_stored for row in response.context["cl"].result_list} == {2}


def test_the_pages_are_read_only_and_show_the_values(admin_client: Client) -> None:
    sessions(0, 1)
    stored = StoredSession.objects.get(session_id="s0")
    first = StoredEvent.objects.order_by("pk").first()
    assert first is not None
    page = admin_client.get(f"{SESSIONS}{stored.pk}/change/")
    assert page.status_code == 200 and b"topic 0" in page.content and b"<textarea" not in page.content
    assert b"message 1" in admin_client.get(f"{EVENTS}{first.pk}/change/").content
    for url in (SESSIONS, EVENTS):
        assert admin_client.get(f"{url}add/").status_code == 403
    assert admin_client.post(f"{SESSIONS}{stored.pk}/delete/", {"post": "yes"}).status_code == 403
    assert StoredSession.objects.filter(pk=stored.pk).exists()


def test_a_row_changed_at_rest_is_shown_as_unreadable(admin_client: Client) -> None:
    sessions(0, 1)
    stored = StoredSession.objects.get(session_id="s0")
    raw_update(StoredSession, stored.pk, "state", stored.state.replace("topic 0", "planted"))
    page = admin_client.get(f"{SESSIONS}{stored.pk}/change/").content
    assert b"(unreadable: " in page and b"planted" not in page
