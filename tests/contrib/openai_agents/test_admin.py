"""The run states and session items pages: read-only, and a page costs the same queries at any size."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tests.contrib.openai_agents.agents import first_run, payments_agent
from turnstate_app.contrib.openai_agents import DjangoSession, pause_approvals
from turnstate_app.contrib.openai_agents.models import StoredRunState, StoredSessionItem

pytestmark = pytest.mark.django_db(transaction=True)

STATES = "/admin/turnstate_openai_agents/storedrunstate/"
ITEMS = "/admin/turnstate_openai_agents/storedsessionitem/"


def shown_block(page: str, field: str) -> str:
    """The text of the ``<pre>`` a read-only field of a change page shows, as the page holds it."""
    row = page.split(f'class="form-row field-{field}', 1)[1]
    return row.split('<pre class="turnstate-value">', 1)[1].split("</pre>", 1)[0]


def paused_runs(first: int, n: int) -> None:
    agent = payments_agent()
    for i in range(first, first + n):
        session = DjangoSession(f"admin-session-{i}")
        pause_approvals(
            first_run(agent, session=session),
            agent=agent,
            run_id=f"admin-run-{i}",
            session_id=session.session_id,
        )


def test_the_states_page_costs_the_same_queries_at_two_sizes(admin_client: Client) -> None:
    paused_runs(0, 2)
    with CaptureQueriesContext(connection) as small:
        response = admin_client.get(STATES)
    assert response.status_code == 200
    rows = {row.run_id: row for row in response.context["cl"].result_list}
    assert rows["admin-run-0"].pending_pauses == 2 and rows["admin-run-0"].size > 1000
    paused_runs(2, 6)
    with CaptureQueriesContext(connection) as large:
        response = admin_client.get(STATES)
    assert len(response.context["cl"].result_list) == 8
    assert len(large.captured_queries) == len(small.captured_queries)


def test_the_pages_are_read_only_and_show_the_values(admin_client: Client) -> None:
    paused_runs(0, 1)
    state = StoredRunState.objects.get()
    item = StoredSessionItem.objects.order_by("pk").first()
    assert item is not None
    page = admin_client.get(f"{STATES}{state.pk}/change/")
    assert page.status_code == 200 and b"$schemaVersion" in page.content and b"<textarea" not in page.content
    assert b"Pay acme" in admin_client.get(f"{ITEMS}{item.pk}/change/").content
    for url in (STATES, ITEMS):
        assert admin_client.get(f"{url}add/").status_code == 403
    assert admin_client.post(f"{STATES}{state.pk}/delete/", {"post": "yes"}).status_code == 403
    assert StoredRunState.objects.count() == 1
    response: Any = admin_client.get(ITEMS)
    assert response.status_code == 200 and len(response.context["cl"].result_list) >= 1


def test_a_run_state_and_a_session_item_are_indented_in_a_scrolling_block(admin_client: Client) -> None:
    paused_runs(0, 1)
    state = StoredRunState.objects.get()
    item = StoredSessionItem.objects.order_by("pk").first()
    assert item is not None

    run_state = shown_block(admin_client.get(f"{STATES}{state.pk}/change/").content.decode(), "run_state")
    session_item = shown_block(admin_client.get(f"{ITEMS}{item.pk}/change/").content.decode(), "session_item")

    assert run_state.startswith("{\n") and "\n  &quot;$schemaVersion&quot;: " in run_state
    assert session_item.startswith("{\n") and "\n  &quot;" in session_item
