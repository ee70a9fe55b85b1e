"""The operator bench's seed under steady traffic (``bench/ops_seed.py``): as the store grows, only
history grows; the recent traffic, every row an operator can still act on, stays the same rows.

Small sizes against a small reference (the bench's own is 10k store rows), so it runs in a
fraction of a second; the seed's lines are generated without a database.
"""

from __future__ import annotations

import io
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connections

from bench import ops_seed
from turnstate_app.status import COUNTS

NOW = 1_800_000_000.0
REFERENCE = 2000
SIZES = (REFERENCE, 4 * REFERENCE)
SEED = 7
OWNERS = [1, 2, 3]
SAME_ROWS = COUNTS
"""The figures of ``turnstate_status`` that count rows: under steady traffic, the same at every size."""


def slot_of(thread: str) -> int:
    return int(thread.split("-")[1])


def steady(n_rows: int) -> tuple[list[list[str]], list[list[str]], dict[str, Any]]:
    """The store's and the ledger's rows (split into columns) and the shape of one steady seed."""
    shape, ledger = ops_seed.Shape(), io.StringIO()
    lines = ops_seed.steady_store_lines(n_rows, SEED, OWNERS, NOW, shape, ledger, REFERENCE)
    store = [line.rstrip("\n").split("\t") for line in lines]
    pauses = [line.split("\t") for line in ledger.getvalue().splitlines()]
    return store, pauses, shape.as_dict()


@pytest.fixture(scope="module")
def seeds() -> dict[int, tuple[list[list[str]], list[list[str]], dict[str, Any]]]:
    return {n: steady(n) for n in SIZES}


@pytest.fixture(scope="module")
def recent() -> set[int]:
    return ops_seed.recent_slots(SEED, NOW, ops_seed.slot_count(REFERENCE))


def column(row: list[str], name: str) -> str:
    return row[ops_seed.PAUSE_COLUMNS.index(name)]


def test_the_recent_slots_are_the_same_rows_at_every_size(seeds: Any, recent: set[int]) -> None:
    assert recent
    small, big = (seeds[n] for n in SIZES)
    for rows in (0, 1):  # the store, the ledger
        thread = 0 if rows == 0 else ops_seed.PAUSE_COLUMNS.index("thread_id")
        ours = [sorted("\t".join(r) for r in seeds[n][rows] if slot_of(r[thread]) in recent) for n in SIZES]
        assert ours[0] and ours[0] == ours[1]
    parts = [seeds[n][2]["steady_traffic"] for n in SIZES]
    assert parts[0]["recent"] == parts[1]["recent"]
    assert parts[0]["recent"]["slots"] == len(recent)
    assert parts[1]["history"]["pauses"] > 3 * parts[0]["history"]["pauses"]
    assert [len(seeds[n][0]) for n in SIZES] == list(SIZES)
    assert small[2]["store_rows"] == len(small[0]) and big[2]["store_rows"] == len(big[0])


def test_history_is_settled_and_older_than_the_recent_days(seeds: Any, recent: set[int]) -> None:
    _store, pauses, _shape = seeds[SIZES[-1]]
    history = [p for p in pauses if slot_of(column(p, "thread_id")) not in recent]
    assert history
    horizon = datetime.fromtimestamp(NOW, UTC) - timedelta(days=ops_seed.STEADY_DAYS)
    answered_by_group: Counter[str] = Counter()
    for p in history:
        assert datetime.fromisoformat(column(p, "created_at")) < horizon
        assert (column(p, "status"), column(p, "continuation")) in {
            ("expired", "\\N"),
            ("answered", "continued"),
        }
        if column(p, "group") != "\\N":
            assert column(p, "status") == "answered"
            answered_by_group[column(p, "group")] += 1
    assert answered_by_group  # groups in history, each answered whole
    store, _pauses, _shape = seeds[SIZES[-1]]
    for row in store:
        if slot_of(row[0]) not in recent:
            at = datetime.fromisoformat(row[ops_seed.META_COLUMNS.index("created_at")])
            assert at < horizon + timedelta(days=7)  # an answer comes within the token's life


def test_a_size_below_the_reference_is_refused() -> None:
    with pytest.raises(ValueError, match="reference size"):
        list(
            ops_seed.steady_store_lines(
                REFERENCE // 2, SEED, OWNERS, NOW, ops_seed.Shape(), io.StringIO(), REFERENCE
            )
        )


@pytest.mark.skipif(connections["default"].vendor != "postgresql", reason="the bench seeds with COPY")
@pytest.mark.django_db(transaction=True)
def test_the_figures_count_the_same_rows_at_every_size() -> None:
    from django.utils import timezone

    from turnstate_app.status import lifecycle_status

    figures = []
    for n_rows in SIZES:
        owners = ops_seed.seed_owners(3)
        shape = ops_seed.seed_store(n_rows, SEED, owners, steady_traffic=True, reference_rows=REFERENCE)
        assert shape["store_rows"] == n_rows
        figures.append(lifecycle_status(now=timezone.now()).as_dict())
    for name in SAME_ROWS:
        assert figures[0][name] == figures[1][name], name
    assert figures[0]["pending"] > 0
