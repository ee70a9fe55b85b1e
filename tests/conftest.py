from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.db import connections
from django.test import Client
from rest_framework.test import APIClient

from tests.api_support import client_for
from tests.factories import UserFactory
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


class TurnstateSettings(dict[str, Any]):
    """TURNSTATE for one test: each key set here is applied at once, the rest restored after."""

    def __init__(self, settings: Any) -> None:
        super().__init__()
        self._settings = settings

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        self._settings.TURNSTATE = dict(self)

    def replace(self, value: Any) -> None:
        """TURNSTATE becomes ``value`` itself, a dict or not (what the system checks judge)."""
        self.clear()
        if isinstance(value, dict):
            super().update(value)
        self._settings.TURNSTATE = value

    def remove(self) -> None:
        """No TURNSTATE setting at all: every key takes its default."""
        self.clear()
        del self._settings.TURNSTATE


@pytest.fixture
def turnstate_settings(settings: Any) -> TurnstateSettings:
    """Override TURNSTATE for one test: ``turnstate_settings["KEY"] = value`` applies it."""
    return TurnstateSettings(settings)


@pytest.fixture
def users() -> dict[str, Any]:
    """A pause's owner, another user, and a staff member."""
    return {
        "owner": UserFactory.create(username="owner"),
        "other": UserFactory.create(username="other"),
        "staff": UserFactory.create(username="staff", is_staff=True),
    }


@pytest.fixture
def staff(users: dict[str, Any]) -> APIClient:
    """The API as the staff member, logged in through the project's session authentication."""
    return client_for(users["staff"])


@pytest.fixture
def staff_client(users: dict[str, Any]) -> Callable[..., Client]:
    """The admin as the staff member holding exactly the permissions named: ``staff_client("view_pause")``."""

    def log_in(*codenames: str) -> Client:
        user = users["staff"]
        user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
        client = Client()
        client.force_login(user)
        return client

    return log_in


@pytest.fixture(autouse=True)
def _close_async_thread_connections() -> Iterator[None]:
    """Async tests reach the database from asgiref's worker thread (and LangGraph's sync writes
    from the saver's thread); close their connections after.

    Otherwise it stays open and PostgreSQL refuses to drop the test database at the end.
    """
    yield
    from asgiref.sync import SyncToAsync

    SyncToAsync.single_thread_executor.submit(connections.close_all).result()
    # The LangGraph saver's own thread closes its connection once a run's threads are gone, or
    # keeps it up to CONN_MAX_AGE: closed now, so no test's database outlives it in use.
    saver_connections = sys.modules.get("turnstate_app.contrib.langgraph.connections")
    if saver_connections is not None:
        saver_connections.release_saver_connections()
