"""The saver's admin pages: read-only, and a page costs the same queries at any size."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from langgraph.checkpoint.serde.types import INTERRUPT, RESUME

from tests.contrib.langgraph.test_saver import put_chain
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver

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
