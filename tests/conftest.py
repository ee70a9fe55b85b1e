from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections

from turnstate_app.ports import InMemoryCheckpointCommandPort, ModelCheckpointCommandPort

# A skipped test of an integration (tests/contrib/) fails the run.
pytest_plugins = ["tests.contrib.skipguard"]


@pytest.fixture(scope="session", autouse=True)
def _database_server_reachable(django_db_blocker: Any) -> None:
    """Fail loudly, before any test, when the chosen database server cannot be reached.

    Never falls back to SQLite: a run that asked for PostgreSQL or MariaDB tests that.
    """
    connection = connections["default"]
    if connection.vendor == "sqlite":
        return
    with django_db_blocker.unblock():
        try:
            # The maintenance database: the test database does not exist yet.
            with connection._nodb_cursor() as cursor:
                cursor.execute("SELECT 1")
        except Exception as exc:
            pytest.exit(f"the database in DATABASE_URL is unreachable: {exc}", returncode=3)


@pytest.fixture
def memory_port() -> InMemoryCheckpointCommandPort:
    return InMemoryCheckpointCommandPort()


@pytest.fixture
def model_port() -> ModelCheckpointCommandPort:
    return ModelCheckpointCommandPort()


@pytest.fixture
def turnstate_settings(settings: Any) -> Iterator[dict[str, Any]]:
    """Override TURNSTATE keys for one test: ``turnstate_settings["KEY"] = value`` then apply."""
    overrides: dict[str, Any] = {}

    class Applier(dict[str, Any]):
        def __setitem__(self, key: str, value: Any) -> None:
            super().__setitem__(key, value)
            settings.TURNSTATE = dict(self)

    applier = Applier(overrides)
    yield applier


@pytest.fixture(autouse=True)
def _close_async_thread_connections() -> Iterator[None]:
    """Async tests reach the database from asgiref's worker thread; close its connection after.

    Otherwise it stays open and PostgreSQL refuses to drop the test database at the end.
    """
    yield
    from asgiref.sync import SyncToAsync

    SyncToAsync.single_thread_executor.submit(connections.close_all).result()
