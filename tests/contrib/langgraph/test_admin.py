"""The saver's admin pages: read-only, and a page costs the same queries at any size."""

from __future__ import annotations

import html
import re
import uuid
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from langgraph.checkpoint.serde.types import INTERRUPT, RESUME

from tests.contrib.langgraph.test_saver import put_chain
from tests.encryption_support import KEY_A
from tests.pause_helpers import mint
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver
from turnstate_app.contrib.langgraph.models import Checkpoint

pytestmark = pytest.mark.django_db

THREADS = "/admin/turnstate_langgraph/langgraphthread/"
CHECKPOINTS = "/admin/turnstate_langgraph/checkpoint/"


def make_threads(n: int) -> list[str]:
    saver = DjangoCheckpointSaver()
    names = []
    for i in range(n):
        name = f"admin-{i}-{uuid.uuid4().hex[:8]}"
        *_, head = put_chain(saver, name, 2)
        if i % 2 == 0:  # half the threads wait on an interrupt; one of those was answered already
            saver.put_writes(head, [(INTERRUPT, ["question"])], task_id="ask")
            saver.put_writes(head, [(INTERRUPT, ["question"])], task_id="ask-2")
            if i == 0:
                saver.put_writes(head, [(RESUME, "yes")], task_id="ask-2")
        names.append(name)
    return names


def queries_for(client: Client, url: str) -> tuple[int, Any]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return len(captured.captured_queries), response


def test_the_threads_page_shows_heads_and_waiting_interrupts_at_a_constant_cost(admin_client: Client) -> None:
    few = make_threads(3)
    small, response = queries_for(admin_client, THREADS)
    rows = {row.thread_id: row for row in response.context["cl"].result_list}
    assert set(rows) == set(few)  # one row per thread: the head only
    assert [rows[name].pending_interrupts for name in few] == [1, 0, 2]
    make_threads(40)
    large, response = queries_for(admin_client, THREADS)
    assert len(response.context["cl"].result_list) == 43
    assert large == small


def test_the_checkpoints_page_costs_the_same_at_any_size(admin_client: Client) -> None:
    make_threads(2)
    small, _ = queries_for(admin_client, CHECKPOINTS)
    make_threads(30)
    large, response = queries_for(admin_client, CHECKPOINTS)
    assert len(response.context["cl"].result_list) == 64
    assert large == small


def test_the_pages_are_read_only(admin_client: Client) -> None:
    [name] = make_threads(1)
    assert admin_client.get(THREADS + "add/").status_code == 403
    response = admin_client.get(THREADS)
    assert b"Add LangGraph thread" not in response.content
    assert name.encode() in response.content


def shown_block(page: str, field: str) -> str:
    """The text of the ``<pre>`` a read-only field of a change page shows, as the page holds it."""
    row = page.split(f'class="form-row field-{field}', 1)[1]
    return row.split('<pre class="turnstate-value">', 1)[1].split("</pre>", 1)[0]


def test_a_checkpoint_page_shows_its_state_values_decrypted_indented_and_escaped(
    admin_client: Client, turnstate_settings: Any
) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    thread = f"admin-values-{uuid.uuid4().hex[:8]}"
    *_, head = put_chain(DjangoCheckpointSaver(), thread, 2, b="<script>alert('b')</script>")
    row = Checkpoint.objects.get(thread_id=thread, checkpoint_id=head["configurable"]["checkpoint_id"])
    assert row.encryption_key_id and b"alert" not in bytes(row.checkpoint)  # sealed at rest

    page = admin_client.get(f"{CHECKPOINTS}{row.pk}/change/").content.decode()

    values = shown_block(page, "state_values")
    assert values.startswith("{\n") and "\n  &quot;a&quot;: &quot;a1&quot;" in values
    assert "&lt;script&gt;alert(" in values and "<script>alert" not in page


def test_an_unreadable_checkpoint_page_says_why_and_shows_nothing_of_it(
    admin_client: Client, turnstate_settings: Any
) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    thread = f"admin-gone-{uuid.uuid4().hex[:8]}"
    *_, head = put_chain(DjangoCheckpointSaver(), thread, 1, b="kept-secret")
    row = Checkpoint.objects.get(thread_id=thread, checkpoint_id=head["configurable"]["checkpoint_id"])
    turnstate_settings["ENCRYPTION_KEYS"] = []  # the key is gone

    response = admin_client.get(f"{CHECKPOINTS}{row.pk}/change/")

    assert response.status_code == 200
    values = shown_block(response.content.decode(), "state_values")
    assert values.startswith("(unreadable: ") and "kept-secret" not in response.content.decode()


def test_the_thread_and_checkpoint_pages_link_to_their_pauses(admin_client: Client) -> None:
    [name] = make_threads(1)
    head = Checkpoint.objects.filter(thread_id=name).order_by("-checkpoint_id")[0]
    at_head = mint(thread_id=name, checkpoint_id=head.checkpoint_id)
    earlier = mint(thread_id=name, checkpoint_id="an-earlier-checkpoint")
    mint(thread_id=f"{name}-other", checkpoint_id=head.checkpoint_id)
    expected = {
        f"{THREADS}{head.pk}/change/": {at_head.claims.jti, earlier.claims.jti},
        f"{CHECKPOINTS}{head.pk}/change/": {at_head.claims.jti},
    }

    for page, jtis in expected.items():
        links = re.findall(
            r'href="(/admin/turnstate_app/pause/\?[^"]*)"', admin_client.get(page).content.decode()
        )
        assert len(links) == 1, (page, links)
        listed = admin_client.get(html.unescape(links[0]))
        assert listed.status_code == 200, listed.get("Location")
        assert {row.jti for row in listed.context["cl"].result_list} == jtis, page
