"""``DjangoSessionService`` against ADK's own services: the same calls, the same outcomes.

One sequence of every call runs on ``DjangoSessionService`` and on each reference — ADK's
``InMemorySessionService``, its ``DatabaseSessionService`` on SQLite (a file of its own, whatever
database the suite runs on) and, on the PostgreSQL leg, on a PostgreSQL database of its own — and
each call's outcome is compared. What legitimately differs is normalised, nothing else: the id a
service generates for a session created without one (each is checked to be a non-empty id, then
read as ``<generated>``). Times need no normalising: ADK's clock is fixed for the sequence and each
event carries its own timestamp, in whole microseconds, which every service keeps exactly.

The stale-session sequence is compared with ``DatabaseSessionService`` only: the in-memory
service has no stored revision to be stale against.
"""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext
from google.adk.errors import StaleSessionError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.platform import time as platform_time
from google.adk.sessions import BaseSessionService, InMemorySessionService, Session
from google.adk.sessions.base_session_service import GetSessionConfig, ListSessionsResponse
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.genai import types

from turnstate_app.contrib.google_adk import DjangoSessionService
from turnstate_app.contrib.google_adk.models import StoredEvent, StoredSession

pytestmark = pytest.mark.django_db(transaction=True)

T0 = 1_765_000_000.0
"""ADK's clock while a sequence runs (a session's creation time), and the first event's time."""
ON_POSTGRES = settings.DATABASES["default"]["ENGINE"].endswith("postgresql")
REFERENCES = ["in-memory", "adk-sqlite", *(["adk-postgres"] if ON_POSTGRES else [])]
DATABASE_REFERENCES = [name for name in REFERENCES if name != "in-memory"]
Factory = Callable[[], BaseSessionService]


@pytest.fixture(scope="module")
def postgres_reference(django_db_setup: Any, django_db_blocker: Any) -> Iterator[str | None]:
    """A PostgreSQL database for ADK's own service, beside the test database (PostgreSQL leg only)."""
    if not ON_POSTGRES:
        yield None
        return
    name = f"turnstate_adk_reference{os.environ.get('TEST_DB_SUFFIX', '')}"
    params = connection.get_connection_params()
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')
        cursor.execute(f'CREATE DATABASE "{name}"')
    host, port, user = (
        params.get("host", "127.0.0.1"),
        params.get("port", 5432),
        params.get("user", "postgres"),
    )
    yield f"postgresql+psycopg://{user}@{host}:{port}/{name}"
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def reference_factory(tmp_path: Path, postgres_reference: str | None) -> Callable[[str], Factory]:
    def make(name: str) -> Factory:
        if name == "in-memory":
            return InMemorySessionService
        if name == "adk-sqlite":
            return lambda: DatabaseSessionService(f"sqlite+aiosqlite:///{tmp_path / 'adk.sqlite3'}")
        assert postgres_reference is not None
        return lambda: DatabaseSessionService(postgres_reference)

    return make


def run(factory: Factory, script: Callable[[BaseSessionService, str], Awaitable[Any]], app: str) -> Any:
    """``script`` on a new service in one event loop (a SQLAlchemy engine is bound to its loop)."""

    async def main() -> Any:
        service = factory()
        platform_time.set_time_provider(lambda: T0)
        try:
            return await script(service, app)
        finally:
            platform_time.reset_time_provider()
            if isinstance(service, DatabaseSessionService):
                await service.close()

    return asyncio.run(main())


def event(n: int, delta: dict[str, Any] | None = None, *, at: float | None = None, **fields: Any) -> Event:
    """Event ``e<n>`` at ``T0 + n`` (or ``at``), a user's text unless ``content`` is given."""
    content = fields.pop("content", None) or types.Content(
        role="user", parts=[types.Part(text=f"message {n} é ✓")]
    )
    return Event(
        id=f"e{n}",
        invocation_id=fields.pop("invocation_id", "inv-1"),
        author=fields.pop("author", "user"),
        timestamp=T0 + n if at is None else at,
        content=content,
        actions=EventActions(state_delta=delta or {}),
        **fields,
    )


def call_of_tool(n: int) -> Event:
    call = types.FunctionCall(id="call-1", name="book", args={"city": "Lyon", "nights": 2})
    return event(
        n, author="planner", content=types.Content(role="model", parts=[types.Part(function_call=call)])
    )


def outcome(value: Any) -> Any:
    """A result as plain data: sessions and events as ADK dumps them (JSON mode)."""
    if isinstance(value, Session | Event):
        return value.model_dump(mode="json")
    if isinstance(value, ListSessionsResponse):
        return [session.model_dump(mode="json") for session in value.sessions]
    return value


async def attempt(call: Awaitable[Any]) -> Any:
    """The call's outcome, or the name of the error it raised."""
    try:
        return outcome(await call)
    except Exception as exc:
        return type(exc).__name__


def generated(dumped: dict[str, Any]) -> dict[str, Any]:
    assert isinstance(dumped["id"], str) and len(dumped["id"]) >= 8
    return {**dumped, "id": "<generated>"}


async def every_call(service: BaseSessionService, app: str) -> list[Any]:
    """Every call of the service, with each call's outcome."""
    out: list[Any] = []
    state = {
        "topic": "trip",
        "app:plan": "gold",
        "user:lang": "fr",
        "temp:draft": "x",
        "nested": {"a": [1, 2]},
    }
    session = await service.create_session(app_name=app, user_id="ann", session_id="s1", state=state)
    out.append(outcome(session))
    out.append(await attempt(service.create_session(app_name=app, user_id="ann", session_id="s1")))
    out.append(
        generated(
            outcome(await service.create_session(app_name=app, user_id="bob", state={"user:lang": "de"}))
        )
    )
    out.append(outcome(await service.create_session(app_name=app, user_id="bob", session_id="s1")))
    appended = [
        event(1, {"step": 1, "temp:scratch": "t"}),
        event(2, {"app:plan": "platinum", "user:lang": "en", "user:tz": "CET"}),
        event(3, {"step": 99}, partial=True),
        call_of_tool(4),
        event(5, {"step": 2, "app:seen": True, "user:tz": "UTC", "temp:x": 1, "nested": {"b": None}}),
        event(6),
    ]
    for each in appended:
        out.append(outcome(await service.append_event(session, each)))
        out.append(outcome(session))
    ids: dict[str, Any] = {"app_name": app, "user_id": "ann", "session_id": "s1"}
    for config in (
        None,
        GetSessionConfig(num_recent_events=2),
        GetSessionConfig(num_recent_events=0),
        GetSessionConfig(num_recent_events=99),
        GetSessionConfig(after_timestamp=T0 + 4),
        GetSessionConfig(after_timestamp=T0 + 4, num_recent_events=1),
        GetSessionConfig(after_timestamp=T0 + 60),
    ):
        out.append(outcome(await service.get_session(**ids, config=config)))
    out.append(outcome(await service.get_session(app_name=app, user_id="ann", session_id="nope")))
    out.append(outcome(await service.get_session(app_name=app, user_id="bob", session_id="s1")))
    out.append(outcome(await service.get_session(app_name="other-app", user_id="ann", session_id="s1")))
    for user in ("ann", "bob", None, "nobody"):
        listed = outcome(await service.list_sessions(app_name=app, user_id=user))
        out.append([generated(s) if s["id"] != "s1" else s for s in listed])
    out.append(outcome(await service.list_sessions(app_name="other-app")))
    for user in ("ann", "bob", "nobody"):
        out.append(await service.get_user_state(app_name=app, user_id=user))
    await service.delete_session(**ids)
    out.append(outcome(await service.get_session(**ids)))
    out.append(await attempt(service.append_event(session, event(7))))
    await service.delete_session(**ids)  # gone already: nothing happens
    out.append(outcome(await service.list_sessions(app_name=app, user_id="ann")))
    out.append(await service.get_user_state(app_name=app, user_id="ann"))  # a user's state outlives sessions
    return out


@pytest.mark.parametrize("reference", REFERENCES)
def test_every_call_has_the_outcome_adks_services_give(
    reference: str, reference_factory: Callable[[str], Factory]
) -> None:
    app = f"app-{uuid.uuid4().hex[:8]}"
    ours = run(DjangoSessionService, every_call, app)
    theirs = run(reference_factory(reference), every_call, app)
    assert len(ours) == len(theirs)
    for n, (mine, other) in enumerate(zip(ours, theirs, strict=True)):
        assert mine == other, f"call #{n} differs"
    created, events_all = ours[0], ours[16]
    assert created["state"] == {
        "topic": "trip",
        "nested": {"a": [1, 2]},
        "app:plan": "gold",
        "user:lang": "fr",
    }
    assert [e["id"] for e in events_all["events"]] == ["e1", "e2", "e4", "e5", "e6"]
    assert events_all["state"]["app:plan"] == "platinum" and "temp:x" not in events_all["state"]


async def stale_copies(service: BaseSessionService, app: str) -> list[Any]:
    """Copies of one session appended to after the stored session moved on."""
    ids: dict[str, Any] = {"app_name": app, "user_id": "ann", "session_id": "s1"}
    out: list[Any] = []
    created = await service.create_session(**ids, state={"n": 0})
    first = await service.get_session(**ids)
    second = await service.get_session(**ids)
    assert first is not None and second is not None
    out.append(await attempt(service.append_event(first, event(1, {"n": 1}))))
    out.append(await attempt(service.append_event(second, event(2, {"n": 2}))))  # first moved it on
    out.append(await attempt(service.append_event(created, event(3, {"n": 3}))))
    out.append(await attempt(service.append_event(first, event(4, {"n": 4}))))  # first is current
    fresh = await service.get_session(**ids)
    assert fresh is not None
    earlier = event(5, {"n": 5}, at=T0 + 2.5)  # a timestamp before the stored revision's
    out.append(await attempt(service.append_event(fresh, earlier)))
    out.append(await attempt(service.append_event(first, event(6, {"n": 6}))))  # behind, though later
    out.append(await attempt(service.append_event(fresh, event(7, {"n": 7}))))
    # A copy built by hand, whose last event is the newest stored one: current, as ADK decides.
    by_hand = Session(id="s1", app_name=app, user_id="ann", events=list(fresh.events), last_update_time=0.0)
    out.append(await attempt(service.append_event(by_hand, event(8, {"n": 8}))))
    out.append(outcome(await service.get_session(**ids)))
    return out


@pytest.mark.parametrize("reference", DATABASE_REFERENCES)
def test_a_stale_copy_is_refused_as_adks_database_service_refuses_it(
    reference: str, reference_factory: Callable[[str], Factory]
) -> None:
    app = f"app-{uuid.uuid4().hex[:8]}"
    ours = run(DjangoSessionService, stale_copies, app)
    assert ours == run(reference_factory(reference), stale_copies, app)
    stale = StaleSessionError.__name__
    assert [type(o).__name__ if not isinstance(o, str) else o for o in ours[:8]] == [
        "dict",
        stale,
        stale,
        "dict",
        "dict",
        stale,
        "dict",
        "dict",
    ]
    assert ours[8]["state"] == {"n": 8}
    assert [e["id"] for e in ours[8]["events"]] == ["e1", "e5", "e4", "e7", "e8"]  # in time order


def test_it_is_adks_session_service() -> None:
    assert isinstance(DjangoSessionService(), BaseSessionService)


def statements(run_call: Callable[[], Any]) -> tuple[list[str], Any]:
    """The statements a sync call sends on the default connection (transaction control left out), and
    what it returned."""
    with CaptureQueriesContext(connections["default"]) as seen:
        result = run_call()
    sent = [q["sql"] for q in seen.captured_queries]
    return [sql for sql in sent if sql.split(None, 1)[0].upper() not in ("BEGIN", "COMMIT")], result


def test_each_call_sends_a_few_statements_whatever_the_session_holds() -> None:
    service = DjangoSessionService()
    app = f"app-{uuid.uuid4().hex[:8]}"
    ids: dict[str, Any] = {"app_name": app, "user_id": "ann", "session_id": "s1"}
    first, _ = statements(lambda: service.create_session_sync(**ids, state={"app:a": 1, "user:b": 2}, now=T0))
    assert len(first) <= 9, first  # the session; each scope's first row (a savepoint guards its race)
    other: dict[str, Any] = {**ids, "session_id": "s2"}
    created, _ = statements(lambda: service.create_session_sync(**other, state={"c": 3}, now=T0))
    assert len(created) == 2, created  # the session's INSERT; its app and user state in one SELECT
    session = service.get_session_sync(**ids)
    assert session is not None
    for n in range(1, 30):
        each = event(n, {"step": n})
        appended, session.last_update_time = statements(partial(service.store_event_sync, session, each))
        assert len(appended) == 3, appended  # the session locked, updated; the event inserted
    scoped, _ = statements(lambda: service.store_event_sync(session, event(30, {"app:a": 2, "user:b": 3})))
    assert len(scoped) == 7, scoped  # and per scope a locked read and an UPDATE
    read, found = statements(lambda: service.get_session_sync(**ids))
    assert len(read) == 2 and len(found.events) == 30 and found.state["step"] == 29
    none = GetSessionConfig(num_recent_events=0)
    assert len(statements(lambda: service.get_session_sync(**ids, config=none))[0]) == 1
    listed, response = statements(lambda: service.list_sessions_sync(app_name=app))
    assert len(listed) == 2 and len(response.sessions) == 2
    assert len(statements(lambda: service.get_user_state_sync(app_name=app, user_id="ann"))[0]) == 1
    assert len(statements(lambda: service.delete_session_sync(**ids))[0]) <= 3
    assert not StoredEvent.objects.filter(session__app_name=app, session__session_id="s1").exists()


def test_two_writers_holding_one_copy_store_one_event() -> None:
    """Two threads (each on its own connection) append to copies read at the same revision: one event
    lands, the other writer is told its copy is stale; never both, never neither."""
    service = DjangoSessionService()
    app = f"app-{uuid.uuid4().hex[:8]}"
    ids: dict[str, Any] = {"app_name": app, "user_id": "ann", "session_id": "s1"}
    service.create_session_sync(**ids, now=T0)
    copies = [service.get_session_sync(**ids) for _ in range(2)]
    barrier = threading.Barrier(2)
    results: list[str] = []

    def write(copy: Session | None, n: int) -> None:
        assert copy is not None
        barrier.wait()
        try:
            service.store_event_sync(copy, event(n, {"writer": n}))
            results.append("stored")
        except StaleSessionError:
            results.append("stale")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=write, args=(copy, n)) for n, copy in enumerate(copies, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == ["stale", "stored"]
    assert StoredEvent.objects.filter(session__app_name=app).count() == 1
    assert StoredSession.objects.filter(app_name=app).count() == 1


def test_the_first_writes_of_an_apps_state_from_two_writers_both_land() -> None:
    """Two threads create the first sessions of an app at once, each with an ``app:`` key: one inserts
    the app's state row, the other finds it taken and merges into it; both keys are kept."""
    service = DjangoSessionService()
    app = f"app-{uuid.uuid4().hex[:8]}"
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def create(n: int) -> None:
        barrier.wait()
        try:
            service.create_session_sync(app_name=app, user_id=f"user-{n}", state={f"app:k{n}": n}, now=T0)
        except BaseException as exc:  # reported below, with the thread's own traceback
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=create, args=(n,)) for n in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    session = service.create_session_sync(app_name=app, user_id="user-3", now=T0)
    assert session.state == {"app:k1": 1, "app:k2": 2}


@pytest.mark.django_db(transaction=True, databases=["default", "replica"])
def test_using_names_the_database_every_call_runs_on() -> None:
    app = f"app-{uuid.uuid4().hex[:8]}"

    async def calls(service: BaseSessionService, app: str) -> Any:
        session = await service.create_session(app_name=app, user_id="ann", state={"user:k": 1})
        await service.append_event(session, event(1, {"k": 2}))
        return outcome(await service.get_session(app_name=app, user_id="ann", session_id=session.id))

    found = run(lambda: DjangoSessionService(using="replica"), calls, app)
    assert found["state"] == {"k": 2, "user:k": 1} and [e["id"] for e in found["events"]] == ["e1"]
    assert StoredEvent.objects.using("replica").filter(session__app_name=app).count() == 1
    assert not StoredSession.objects.using("default").filter(app_name=app).exists()
    run(DjangoSessionService, calls, app)  # without using: the router's database, another one
    assert StoredSession.objects.using("default").filter(app_name=app).count() == 1
    assert StoredSession.objects.using("replica").filter(app_name=app).count() == 1
