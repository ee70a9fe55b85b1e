"""Each state is one condition, and each figure and list reads it through an index.

A group's state is decided by one rule (``with_group_state``); the lists of one state and the
``failed_groups`` figure find their groups through the members that show the state and must agree
with that rule row for row. On PostgreSQL, every statement of every figure and state list is
planned with sequential scans disabled and realistic statistics: a sequential scan of the ledger or
the store, or an index walked without a condition, means no index serves that state.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from functools import partial
from typing import Any

import pytest
from django.db import connection, transaction
from django.test import Client
from django.utils import timezone

from tests.factories import PauseFactory
from turnstate_app.choices import ContinuationState as State
from turnstate_app.choices import PauseStatus
from turnstate_app.managers import GROUP_STATE, GROUP_STATES
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.status import lifecycle_status

pytestmark = pytest.mark.django_db

LONG_AGO = timedelta(days=2)
"""Older than any ``STALLED_AFTER`` and any pause's age."""


def row(**fields: Any) -> Pause:
    now = timezone.now()
    fields.setdefault("expires_at", now + timedelta(days=1))
    if fields.get("status") == PauseStatus.ANSWERED:
        fields.setdefault("answered_at", now)
        fields.setdefault("continuation", State.QUEUED)
        fields.setdefault("continuation_since", now)
    pause: Pause = PauseFactory.build(**fields)
    return pause


def group_of(name: str, *members: dict[str, Any]) -> list[Pause]:
    """The members of group ``name``, sharing one thread."""
    return [row(group=name, thread_id=f"thread-{name}", **member) for member in members]


ANSWERED: dict[str, Any] = {"status": PauseStatus.ANSWERED, "handed_off_at": timezone.now()}


def every_group_state() -> dict[str, str]:
    """One group (or more) in each state, with pauses of no group around them; group -> state."""
    now = timezone.now()
    stale = now - LONG_AGO
    groups = {
        "g-pending": ("pending", [ANSWERED, {}]),
        "g-complete": ("complete", [ANSWERED, ANSWERED]),
        "g-continued": ("continued", [{**ANSWERED, "continuation": State.CONTINUED}] * 2),
        "g-stalled": (
            "stalled",
            [{**ANSWERED, "continuation": State.RUNNING, "continuation_since": stale}] * 2,
        ),
        "g-running": ("complete", [{**ANSWERED, "continuation": State.RUNNING}] * 2),
        "g-overdue": ("failed", [ANSWERED, {"expires_at": stale}]),
        "g-expired": ("failed", [ANSWERED, {"status": PauseStatus.EXPIRED, "expires_at": stale}]),
        "g-crashed": ("failed", [{**ANSWERED, "continuation": State.CRASHED}] * 2),
        "g-refused": ("failed", [{**ANSWERED, "continuation": State.REFUSED}] * 3),
    }
    rows = [member for name, (_, members) in groups.items() for member in group_of(name, *members)]
    rows += [
        row(),
        row(expires_at=stale),
        row(status=PauseStatus.EXPIRED, expires_at=stale),
        row(**ANSWERED),
        row(**{**ANSWERED, "continuation": State.CONTINUED}),
        row(**{**ANSWERED, "continuation": State.CRASHED}),
        row(**{**ANSWERED, "continuation": State.RUNNING, "continuation_since": stale}),
    ]
    Pause.objects.bulk_create(rows)
    return {name: state for name, (state, _) in groups.items()}


def test_each_group_state_list_agrees_with_the_one_rule_row_for_row() -> None:
    expected = every_group_state()
    now = timezone.now()
    by_rule: dict[str, set[str]] = {state: set() for state in GROUP_STATES}
    for jti, state in Pause.objects.with_group_state(now).values_list("jti", GROUP_STATE):
        if state is not None:
            by_rule[state].add(jti)
    for state in GROUP_STATES:
        listed = set(Pause.objects.in_group_state(state, now).values_list("jti", flat=True))
        assert listed == by_rule[state], state
        groups = set(Pause.objects.in_group_state(state, now).values_list("group", flat=True))
        assert groups == {name for name, wanted in expected.items() if wanted == state}, state
    failed = [str(group) for group in Pause.objects.failed_groups(now).values_list("group", flat=True)]
    assert sorted(failed) == sorted(name for name, wanted in expected.items() if wanted == "failed")
    assert lifecycle_status(now=now).failed_groups == 4


def test_an_unknown_group_state_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown group state"):
        Pause.objects.in_group_state("lost", timezone.now())


# -- the plans (PostgreSQL) ----------------------------------------------------------------------

LEDGER_TABLES = {Pause._meta.db_table, CheckpointMetadata._meta.db_table}
FILLER = 4000
"""Pauses long continued around the few in each state, so the statistics look like a store in use."""
LEFT_BEHIND = 1000
"""Pauses of no group never answered: as many past their age but still marked pending, and
marked expired."""
READ_AND_DROPPED = 200
"""More rows than this read and dropped by a filter means the index did not bound the read."""


def seed_a_store_in_use() -> None:
    if not connection.in_atomic_block:
        # The tables as a store in use has them, not as earlier tests left them: the space of
        # their rolled-back rows (the heap and the indexes) weighs on the plans this test judges.
        with connection.cursor() as cursor:
            for table in LEDGER_TABLES:
                cursor.execute(f"VACUUM FULL {connection.ops.quote_name(table)}")
    every_group_state()
    long_ago = timezone.now() - timedelta(days=30)
    old = {"created_at": long_ago, "expires_at": long_ago + timedelta(days=1)}
    Pause.objects.bulk_create(
        row(
            **old,
            status=PauseStatus.ANSWERED,
            answered_at=long_ago,
            handed_off_at=long_ago,
            continuation=State.CONTINUED,
            continuation_since=long_ago,
            group=f"old-{i // 2}" if i % 5 == 0 else None,
        )
        for i in range(FILLER)
    )
    Pause.objects.bulk_create(
        row(**old, status=status)
        for status in [PauseStatus.PENDING, PauseStatus.EXPIRED]
        for _ in range(LEFT_BEHIND)
    )
    CheckpointMetadata.objects.bulk_create(
        CheckpointMetadata(thread_id=f"old-{i}", checkpoint_id="cp", key=f"channel_values:{i}", value="{}")
        for i in range(FILLER)
    )
    with connection.cursor() as cursor:
        for table in LEDGER_TABLES:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")


def statements_of(action: Callable[[], Any]) -> list[tuple[str, Any]]:
    seen: list[tuple[str, Any]] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        seen.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        action()
    return [(sql, params) for sql, params in seen if any(table in sql for table in LEDGER_TABLES)]


def plan_nodes(plan: dict[str, Any], limited: bool = False) -> Iterator[tuple[dict[str, Any], bool]]:
    """Each node of ``plan``, with whether a ``Limit`` above it stops it early."""
    limited = limited or plan["Node Type"] == "Limit"
    yield plan, limited
    for child in plan.get("Plans", []):
        yield from plan_nodes(child, limited)


def unbounded_reads(sql: str, params: Any) -> list[str]:
    """The nodes of ``sql``'s plan (as run) that read much more of the ledger or the store than they
    keep: a sequential scan; an index walked without a condition, unless in order under a
    ``LIMIT`` keeping every row it reads (a page of the whole list); a filter dropping more than
    :data:`READ_AND_DROPPED` rows after the index."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params)
        document = cursor.fetchone()[0]
    plan = (json.loads(document) if isinstance(document, str) else document)[0]["Plan"]
    found = []
    for node, limited in plan_nodes(plan):
        if node.get("Relation Name") not in LEDGER_TABLES and node.get("Node Type") != "Bitmap Index Scan":
            continue
        kind, index = node["Node Type"], node.get("Index Name")
        dropped = node.get("Rows Removed by Filter", 0) + node.get("Rows Removed by Index Recheck", 0)
        if kind == "Seq Scan":
            found.append(f"sequential scan of {node['Relation Name']}")
        elif "Index" in kind and "Index Cond" not in node and (kind == "Bitmap Index Scan" or not limited):
            found.append(f"{kind} of {index} without a condition")
        elif dropped > READ_AND_DROPPED:
            found.append(f"{kind} of {node.get('Relation Name')} ({index}) read and dropped {dropped} rows")
    return found


def figures_and_lists(now: datetime, admin: Client) -> dict[str, Callable[[], Any]]:
    ledger = Pause.objects
    page = slice(0, 100)
    operations: dict[str, Callable[[], Any]] = {
        "turnstate_status": lambda: lifecycle_status(now=now),
        "GET status/": lambda: admin.get("/api/turnstate/status/"),
        "pending": lambda: list(ledger.in_effective_status(PauseStatus.PENDING, now)[page]),
        "expired": lambda: list(ledger.expired(now)[page]),
        "awaiting_handoff": lambda: list(ledger.awaiting_handoff()[page]),
        "queued": lambda: list(ledger.queued()[page]),
        "running": lambda: list(ledger.running(now)[page]),
        "stalled": lambda: list(ledger.stalled(now)[page]),
        "failed_continuations": lambda: list(ledger.continuation_failed()[page]),
        "redeliverable": lambda: list(ledger.redeliverable()[page]),
        "lost_in_queue": lambda: list(ledger.lost_in_queue(now)[page]),
        "GET pauses/": lambda: admin.get("/api/turnstate/pauses/"),
        "GET pauses/, the next page": lambda: admin.get(admin.get("/api/turnstate/pauses/").json()["next"]),
        "unresumable pauses": lambda: list(ledger.stranded(now)[page]),
        "unresumable rows": lambda: list(CheckpointMetadata.objects.unresumable(now)[page]),
        "failed_groups": lambda: list(ledger.failed_groups(now)[page]),
    }
    for state in GROUP_STATES:
        operations[f"group {state}"] = partial(
            lambda state: list(ledger.in_group_state(state, now)[page]), state
        )
        operations[f"admin ?group_state={state}"] = partial(
            admin.get, f"/admin/turnstate_app/pause/?group_state={state}"
        )
    for figure in ("awaiting_handoff", "queued", "running", "stalled", "failed_continuations"):
        operations[f"admin ?continuation={figure}"] = partial(
            admin.get, f"/admin/turnstate_app/pause/?continuation={figure}"
        )
    operations["admin pause list"] = lambda: admin.get("/admin/turnstate_app/pause/")
    return operations


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the plans are PostgreSQL's")
@pytest.mark.django_db(transaction=True)  # VACUUM runs outside a transaction
def test_no_figure_or_state_list_reads_the_ledger_or_the_store_whole(admin_client: Client) -> None:
    seed_a_store_in_use()
    now = timezone.now()
    offenders: dict[str, list[str]] = {}
    for name, action in figures_and_lists(now, admin_client).items():
        statements = statements_of(action)
        assert statements, f"{name} ran no statement on the ledger or the store"
        for sql, params in statements:
            found = unbounded_reads(sql, params)
            if found:
                offenders.setdefault(name, []).extend(found)
    assert not offenders, json.dumps(offenders, indent=1)
