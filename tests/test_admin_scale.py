"""The admin's lists stay index lookups at any size: keyset pages and exact searches, no OFFSET,
no LIKE, no scan of a whole table.

Judged by PostgreSQL's planner with sequential scans priced out (``enable_seqscan = off``): a
query an index can serve then uses one, and a query no index can serve still shows its
``Seq Scan``. Structural, so it holds on a table of ten rows as on one of ten million.
"""

from __future__ import annotations

import html
import re
from typing import Any
from urllib.parse import unquote

import pytest
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.pause_helpers import legacy_request, lost, mint
from turnstate_app.admin import CheckpointMetadataAdmin, PauseAdmin, UnresumablePauseAdmin

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="reads PostgreSQL's plans"),
]

LISTS = {
    "unresumablepause": (UnresumablePauseAdmin, "turnstate_app_checkpointmetadata"),
    "pause": (PauseAdmin, "turnstate_app_pause"),
    "checkpointmetadata": (CheckpointMetadataAdmin, "turnstate_app_checkpointmetadata"),
}


def url_of(model: str) -> str:
    return reverse(f"admin:turnstate_app_{model}_changelist")


def list_query(client: Client, url: str, query: dict[str, str], table: str) -> str:
    """The SQL of the page's rows: the first statement reading ``table`` with a LIMIT (the pauses'
    "resumable now" for the page's rows comes after it)."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url, query)
    assert response.status_code == 200, response
    pages = [
        q["sql"] for q in queries.captured_queries if f'FROM "{table}"' in q["sql"] and "LIMIT" in q["sql"]
    ]
    return pages[0]


def plan(sql: str, *, priced_out: tuple[str, ...] = ("seqscan",)) -> str:
    """The plan of ``sql`` with the ``priced_out`` ways of reading disabled (a sequential scan, by
    default): one that remains shows no other way exists."""
    with transaction.atomic(), connection.cursor() as cursor:
        for way in priced_out:
            cursor.execute(f"SET LOCAL enable_{way} = off")
        cursor.execute("EXPLAIN " + sql)
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.fixture
def rows(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    for admin_class, _table in LISTS.values():
        monkeypatch.setattr(admin_class, "list_per_page", 2)
    minted = [lost(n) for n in range(3)] + [mint(10 + n) for n in range(3)]
    for n in range(3):
        legacy_request(n)
    return {"jti": minted[1].claims.jti, "thread": "thread-2", "run": "run-11"}


def next_cursor(client: Client, url: str) -> dict[str, str]:
    page = client.get(url).content.decode()
    link = re.search(r'href="\?([^"]*after=[^"]*)" class="turnstate-next"', page)
    assert link is not None
    after = re.search(r"after=([^&]*)", html.unescape(link.group(1)))
    assert after is not None
    return {"after": unquote(after.group(1))}


@pytest.mark.parametrize("model", list(LISTS))
def test_a_later_page_is_read_through_an_index_from_its_cursor(
    admin_client: Client, rows: dict[str, Any], model: str
) -> None:
    url = url_of(model)
    sql = list_query(admin_client, url, next_cursor(admin_client, url), LISTS[model][1])
    assert "OFFSET" not in sql.upper()
    assert "Seq Scan" not in plan(sql), plan(sql)


@pytest.mark.parametrize(
    ("model", "term"),
    [
        ("pause", "jti"),
        ("pause", "thread"),
        ("pause", "run"),
        ("unresumablepause", "jti"),
        ("unresumablepause", "thread"),
    ],
)
def test_a_search_is_an_index_lookup(
    admin_client: Client, rows: dict[str, Any], model: str, term: str
) -> None:
    url = url_of(model)
    response = admin_client.get(url, {"q": rows[term]})
    assert response.context["cl"].result_list, f"{term} {rows[term]} found nothing"
    sql = list_query(admin_client, url, {"q": rows[term]}, LISTS[model][1])
    assert "LIKE" not in sql.upper()
    assert "Seq Scan" not in plan(sql), plan(sql)


def test_the_pauses_that_can_be_resumed_now_are_read_through_an_index(
    admin_client: Client, rows: dict[str, Any]
) -> None:
    """What holds now is judged per row by index probes (the store's unique key), from the
    answerable pauses the status index finds; no scan of either table."""
    response = admin_client.get(url_of("pause"), {"resumable_now": "1"})
    assert {row.thread_id for row in response.context["cl"].result_list} == {"thread-12", "thread-11"}
    sql = list_query(admin_client, url_of("pause"), {"resumable_now": "1"}, LISTS["pause"][1])
    assert "Seq Scan" not in plan(sql), plan(sql)


@pytest.mark.parametrize("model", ["pause", "checkpointmetadata"])
@pytest.mark.parametrize("age", ["1d", "gt30d"])
def test_an_age_filter_reads_its_page_from_the_age_index_in_order(
    admin_client: Client, rows: dict[str, Any], model: str, age: str
) -> None:
    """The page of an age filter is a range of the ``(created_at, id)`` index read in the list's
    order: it stops after its rows, however the ids and the ages of the rows around it relate
    (a walk of the primary key would drop every row outside the age first). With sorting priced
    out too, a plan that still sorts, or reads no range of ages, shows no such index serves it."""
    sql = list_query(admin_client, url_of(model), {"age": age}, LISTS[model][1])
    text = plan(sql, priced_out=("seqscan", "sort"))
    assert "Sort" not in text, text
    assert re.search(r"Index Cond: \(created_at [<>]", text), text
