"""The core's purge reaches the run states of threads left without pauses, asking little of the rest."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from turnstate_app.contrib.openai_agents.models import StoredRunState
from turnstate_app.contrib.openai_agents.retention import purge_orphaned_runs
from turnstate_app.models import Pause

pytestmark = pytest.mark.django_db


def test_a_purge_batch_of_threads_without_run_states_asks_only_the_run_states_table() -> None:
    """Most purged threads were never a run's: one question to its own table, none to the ledger."""
    threads = [f"thread-{n}" for n in range(50)]
    with CaptureQueriesContext(connection) as queries:
        purge_orphaned_runs(sender=Pause, thread_ids=threads, using="default")
    assert len(queries.captured_queries) == 1, [q["sql"] for q in queries.captured_queries]
    assert StoredRunState._meta.db_table in queries.captured_queries[0]["sql"]
    assert Pause._meta.db_table not in queries.captured_queries[0]["sql"]
