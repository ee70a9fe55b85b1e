"""Every SQL statement the app runs is seen by the tracing tools hosts use, whatever DEBUG is.

Sentry's Django integration patches Django's ``CursorWrapper``; OpenTelemetry's database
instrumentations wrap the driver's ``connect`` and trace the cursors it hands out. A
statement run on a driver cursor of the app's own escapes Sentry always, and OpenTelemetry
on psycopg. Each operation runs three times, each time on a fresh setup: once to warm every
cache, once under ``CaptureQueriesContext`` (what Django ran), and once watched by the
tracer alone, with DEBUG False and no query logging, so nothing but the tracer's own hook
can make it see a statement. The two lists of statements must be the same.

Transaction control (``BEGIN``/``COMMIT``/``ROLLBACK``) is left out of every list: each
backend sends it its own way (SQLite's ``BEGIN`` on Django's cursor, psycopg's inside the
driver, ``COMMIT`` through ``connection.commit()``) and it carries no data. Savepoints go
through Django's cursor and are kept.
"""

from __future__ import annotations

import re
import sqlite3
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from importlib import import_module
from importlib.util import find_spec
from typing import Any, Protocol

import pytest
import sentry_sdk
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.postgresql.base import DatabaseWrapper as PostgreSQLDatabaseWrapper
from django.db.backends.sqlite3.base import DatabaseWrapper as SQLiteDatabaseWrapper
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from langgraph.checkpoint.base import empty_checkpoint
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from sentry_sdk.envelope import Envelope
from sentry_sdk.integrations.django import DjangoIntegration
from sentry_sdk.transport import Transport

from tests.contrib.langgraph.test_saver import BIG, cfg, put_chain
from tests.contrib.pydantic_ai.conversations import conversation, sync
from tests.pause_helpers import age, answered, mint
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver
from turnstate_app.contrib.pydantic_ai import DjangoConversationStore
from turnstate_app.models import Pause
from turnstate_app.pauses import continue_once, resume_pause
from turnstate_app.retention import purge_pauses

pytestmark = pytest.mark.django_db(transaction=True)

Run = Callable[[], object]
"""The measured call: one operation of the app."""

Prepare = Callable[[], Run]
"""Sets up what one run needs (unmeasured) and returns the run."""


# -- the operations -----------------------------------------------------------------------


def mint_a_pause() -> Run:
    return lambda: mint()


def resume_a_pause() -> Run:
    minted = mint()
    return lambda: resume_pause(minted.token, {"a": 1})


def continue_a_pause() -> Run:
    resumed = resume_pause(mint().token, "yes")
    return lambda: continue_once(resumed, lambda continuation: "done")


def purge_one_batch() -> Run:
    """One purgeable pause: one batch, then the read that finds no more."""
    age(answered(), 40)
    cutoff = timezone.now() - timedelta(days=30)
    return lambda: purge_pauses(Pause.objects.purgeable(cutoff))


def saver_put() -> Run:
    """A checkpoint with a value large enough for a row of its own: two writes that land together."""
    saver = DjangoCheckpointSaver()
    parent = put_chain(saver, f"t-{uuid.uuid4()}", 1)[-1]
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"a": BIG, "b": "b"}
    checkpoint["channel_versions"] = {"a": "2", "b": "1"}
    return lambda: saver.put(parent, checkpoint, {"source": "loop", "step": 1}, {"a": "2"})


def saver_put_writes() -> Run:
    saver = DjangoCheckpointSaver()
    config = put_chain(saver, f"t-{uuid.uuid4()}", 1)[-1]
    return lambda: saver.put_writes(config, [("x", 1), ("y", 2)], task_id="task-next")


def saver_get_tuple() -> Run:
    saver = DjangoCheckpointSaver()
    thread = f"t-{uuid.uuid4()}"
    put_chain(saver, thread, 3)
    return lambda: saver.get_tuple(cfg(thread))


def saver_list() -> Run:
    saver = DjangoCheckpointSaver()
    thread = f"t-{uuid.uuid4()}"
    put_chain(saver, thread, 3)
    return lambda: list(saver.list(cfg(thread)))


def saver_delete_thread() -> Run:
    saver = DjangoCheckpointSaver()
    thread = f"t-{uuid.uuid4()}"
    put_chain(saver, thread, 3)
    return lambda: saver.delete_thread(thread)


def store_save() -> Run:
    store = DjangoConversationStore()
    conv = conversation(f"c-{uuid.uuid4()}", "one", "two")
    return lambda: sync(store.save, conv, scope="alice")


def store_load() -> Run:
    store = DjangoConversationStore()
    conv = conversation(f"c-{uuid.uuid4()}", "one", "two")
    sync(store.save, conv, scope="alice")
    return lambda: sync(store.load, conv.conversation_id)


OPERATIONS: dict[str, Prepare] = {
    "mint_pause": mint_a_pause,
    "resume_pause": resume_a_pause,
    "continue_once": continue_a_pause,
    "purge_batch": purge_one_batch,
    "saver.put": saver_put,
    "saver.put_writes": saver_put_writes,
    "saver.get_tuple": saver_get_tuple,
    "saver.list": saver_list,
    "saver.delete_thread": saver_delete_thread,
    "store.save": store_save,
    "store.load": store_load,
}


# -- comparing statements -----------------------------------------------------------------

_TRANSACTION_CONTROL = re.compile(r"\s*(BEGIN|COMMIT|ROLLBACK|END|START\s+TRANSACTION)\b", re.IGNORECASE)
_EXECUTEMANY = re.compile(r"^\d+ times: ")  # how Django logs an executemany()
_SAVEPOINT_ID = re.compile(r"\bs\d+_x\d+\b")  # Django's savepoint names: thread id, counter
# A quoted value as CaptureQueriesContext inlines it: SQLite's QUOTE(), psycopg's (`` E'...'``
# when escaped), MySQLdb's (backslash escapes, ``_binary'...'``).
_STRING = r"(?:_binary)?'(?:[^'\\]|\\.|'')*'" if connection.vendor == "mysql" else r"[EX]?'(?:[^']|'')*'"
# Any value, inlined (psycopg adds casts, and writes `` -5``) or a placeholder (the tracers'
# text, as the cursor was given it).
_VALUE = re.compile(
    rf"(?:(?<![\w\"`]){_STRING}|%s|\?|(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])|\b(?:NULL|TRUE|FALSE)\b)"
    r"(?:::\w+(?:\[\])?)*",
    re.IGNORECASE | re.DOTALL,
)

# A list parameter as psycopg2 inlines it (``ARRAY['a','b']``; psycopg 3 writes one literal):
# one value, as the tracers' ``%s``.
_ARRAY = re.compile(r"\bARRAY\[\s*\?(?:\s*,\s*\?)*\s*\]")


def normalised(statements: Iterable[str]) -> list[str]:
    """Each statement with values and placeholders as ``?``; transaction control left out."""
    shapes = []
    for sql in statements:
        if _TRANSACTION_CONTROL.match(sql):
            continue
        text = _EXECUTEMANY.sub("", sql.strip()).replace("%%", "%")
        text = _ARRAY.sub("?", _VALUE.sub("?", _SAVEPOINT_ID.sub("sp", text)))
        text = re.sub(r"\(\s+", "(", re.sub(r"\s+", " ", text))
        shapes.append(text.strip().rstrip(";"))
    return shapes


def statements_django_ran(prepare: Prepare) -> list[str]:
    """The operation's statements as ``CaptureQueriesContext`` records them, after a warm-up run."""
    prepare()()
    run = prepare()
    with CaptureQueriesContext(connection) as queries:
        run()
    captured = normalised(query["sql"] for query in queries.captured_queries)
    assert captured, "the operation ran no statement: nothing to compare"
    return captured


@contextmanager
def unlogged_run(prepare: Prepare) -> Iterator[Run]:
    """The operation's run, set up, on an open connection that logs no query and has no wrapper."""
    run = prepare()
    connection.ensure_connection()  # opened before: a "connect" is not one of the statements
    assert not connection.queries_logged and not connection.execute_wrappers
    yield run


# -- Sentry -------------------------------------------------------------------------------


class MemoryTransport(Transport):
    """Keeps each envelope instead of sending it."""

    envelopes: list[Envelope] = []

    def capture_envelope(self, envelope: Envelope) -> None:
        MemoryTransport.envelopes.append(envelope)


@pytest.fixture(scope="module")
def sentry() -> Iterator[list[Envelope]]:
    """Sentry with its Django integration, as a host sets it up; the no-op client after the module.

    The integration's patch of Django's cursor stays (it is installed once per process), but
    it records nothing once no client has the integration.
    """
    MemoryTransport.envelopes = []
    sentry_sdk.init(
        dsn="https://public@example.invalid/1",
        integrations=[DjangoIntegration()],
        default_integrations=False,
        traces_sample_rate=1.0,
        transport=MemoryTransport,
    )
    try:
        yield MemoryTransport.envelopes
    finally:
        sentry_sdk.get_client().close()
        sentry_sdk.get_global_scope().set_client(None)


def sentry_db_spans(prepare: Prepare, envelopes: list[Envelope]) -> list[str]:
    """The SQL of the ``db`` spans Sentry records for one run of the operation."""
    envelopes.clear()
    with unlogged_run(prepare) as run, sentry_sdk.start_transaction(name="operation", op="test"):
        run()
    events = [event for envelope in envelopes if (event := envelope.get_transaction_event()) is not None]
    assert len(events) == 1, events
    spans = events[0]["spans"]
    assert isinstance(spans, list)
    spans.sort(key=lambda span: str(span["start_timestamp"]))
    return normalised(str(span["description"]) for span in spans if span.get("op") == "db")


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_sentry_sees_every_statement(operation: str, sentry: list[Envelope]) -> None:
    """An error monitor's trace shows each statement Django ran, not only those DEBUG logs."""
    prepare = OPERATIONS[operation]
    expected = statements_django_ran(prepare)
    assert sentry_db_spans(prepare, sentry) == expected


# -- OpenTelemetry ------------------------------------------------------------------------
#
# Each instrumentation wraps its driver's ``connect`` (psycopg's ``connect`` and
# ``Connection.connect``, ``sqlite3.connect``, ``MySQLdb.connect``) and traces the cursors of the
# connections opened after ``instrument()``; a connection opened before keeps untraced cursors.
# Django's pool (psycopg_pool) opens its connections through ``psycopg.Connection.connect``, so
# it is traced as well, but it keeps its connections across ``close()``: only the connections it
# opens after ``instrument()`` are traced, and a pool opened before goes on handing out untraced
# ones until it is closed (``close_pool()``) or they reach its ``max_lifetime``.


class Instrumentor(Protocol):
    """What the tests use of an OpenTelemetry instrumentation (its base class ships untyped)."""

    @property
    def is_instrumented_by_opentelemetry(self) -> bool: ...

    def instrument(self, **kwargs: Any) -> None: ...

    def uninstrument(self, **kwargs: Any) -> None: ...


def instrumentor() -> Instrumentor:
    """OpenTelemetry's instrumentation of this database's driver (a test dependency on each)."""
    if connection.vendor == "postgresql":
        from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

        return PsycopgInstrumentor()
    if connection.vendor == "sqlite":
        from opentelemetry.instrumentation.sqlite3 import SQLite3Instrumentor

        return SQLite3Instrumentor()
    # mysqlclient's, from the same project and release train as the two above (it ships no types).
    instrumentation: Instrumentor = import_module(
        "opentelemetry.instrumentation.mysqlclient"
    ).MySQLClientInstrumentor()
    return instrumentation


PSYCOPG2 = connection.vendor == "postgresql" and find_spec("psycopg") is None
"""psycopg2 as the driver (``make test-postgres-psycopg2``): its instrumentation is not a dependency."""

skip_on_psycopg2 = pytest.mark.skipif(
    PSYCOPG2, reason="psycopg2's OpenTelemetry instrumentation is not a test dependency (Sentry's half runs)"
)


def pooled(wrapper: BaseDatabaseWrapper) -> bool:
    """Whether ``wrapper`` takes its connections from Django's pool."""
    return isinstance(wrapper, PostgreSQLDatabaseWrapper) and wrapper.pool is not None


def reopen_pool(wrapper: BaseDatabaseWrapper) -> None:
    """Django's pool closed and opened anew, filled at once: no connection opens during a run.

    Its connections open after this through the driver's ``connect`` as it is now wrapped (or not).
    """
    if isinstance(wrapper, PostgreSQLDatabaseWrapper) and wrapper.pool is not None:
        wrapper.close_pool()
        wrapper.pool.open(wait=True, timeout=60)


def reconnect(django_db_blocker: Any, *, new_pool: bool = True) -> None:
    """Close Django's connection, to open anew: through the driver's ``connect`` as it is wrapped now
    (with ``new_pool``, Django's pool too, if it has one).

    An in-memory SQLite test database lives while one connection to it is open: a second
    connection keeps it alive meanwhile (Django's own ``close()`` refuses to close it).
    """
    wrapper = connections[DEFAULT_DB_ALIAS]  # ``connection`` is a proxy to it
    keeper = None
    if isinstance(wrapper, SQLiteDatabaseWrapper) and wrapper.is_in_memory_db():
        keeper = sqlite3.connect(wrapper.settings_dict["NAME"], uri=True)
    BaseDatabaseWrapper.close(wrapper)
    if new_pool:
        reopen_pool(wrapper)
    if keeper is not None:
        with django_db_blocker.unblock():
            wrapper.ensure_connection()
        keeper.close()


@contextmanager
def tracing() -> Iterator[tuple[Instrumentor, InMemorySpanExporter]]:
    """The driver instrumented into an in-memory exporter for the block, then uninstrumented."""
    instrumentation = instrumentor()
    assert not instrumentation.is_instrumented_by_opentelemetry
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentation.instrument(tracer_provider=provider)
    try:
        yield instrumentation, exporter
    finally:
        instrumentation.uninstrument()
        provider.shutdown()


@pytest.fixture(scope="module")
def otel(django_db_setup: None, django_db_blocker: Any) -> Iterator[InMemorySpanExporter]:
    """The driver instrumented into an in-memory exporter, Django's connection (and pool) opened after;
    after the module, untraced connections again."""
    with tracing() as (_, exporter):
        reconnect(django_db_blocker)
        yield exporter
    reconnect(django_db_blocker)  # the connections opened under the tracer, closed


def statement_of(span: ReadableSpan) -> str | None:
    attributes = span.attributes or {}
    text = attributes.get("db.query.text", attributes.get("db.statement"))
    return text if isinstance(text, str) else None


def traced(exporter: InMemorySpanExporter) -> list[str]:
    """The SQL of the client spans finished so far, in the order they started."""
    spans = sorted(exporter.get_finished_spans(), key=lambda span: span.start_time or 0)
    return normalised(
        text for span in spans if span.kind is SpanKind.CLIENT and (text := statement_of(span)) is not None
    )


def otel_db_spans(prepare: Prepare, exporter: InMemorySpanExporter) -> list[str]:
    """The SQL of the client spans the driver's instrumentation records for one run."""
    with unlogged_run(prepare) as run:
        exporter.clear()
        run()
    return traced(exporter)


@skip_on_psycopg2
def test_opentelemetry_traces_the_connections_opened_after_it_instruments_the_driver(
    django_db_blocker: Any,
) -> None:
    """What a host sees depends on when it instruments: before Django opens a connection, all.

    A connection opened before ``instrument()`` stays untraced; without a pool Django's next
    connection is new, so traced; Django's pool hands out the connections it opened before
    until it is closed, after which every connection it opens is traced.
    """
    wrapper = connections[DEFAULT_DB_ALIAS]
    with CaptureQueriesContext(connection) as queries:
        Pause.objects.count()
    expected = normalised(query["sql"] for query in queries.captured_queries)
    assert wrapper.connection is not None  # opened before the driver is instrumented
    with tracing() as (_, exporter):
        Pause.objects.count()
        assert traced(exporter) == []  # the connection opened before: untraced
        reconnect(django_db_blocker, new_pool=False)
        wrapper.ensure_connection()  # what the driver runs on connecting is not the statement's
        exporter.clear()
        Pause.objects.count()
        if pooled(wrapper):
            assert traced(exporter) == []  # the pool's connection opened before: still untraced
            reconnect(django_db_blocker)
            wrapper.ensure_connection()
            exporter.clear()
            Pause.objects.count()
        assert traced(exporter) == expected
    reconnect(django_db_blocker)  # no traced connection left for the tests after


@skip_on_psycopg2
@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_opentelemetry_sees_every_statement(operation: str, otel: InMemorySpanExporter) -> None:
    """A tracer on the driver sees each statement Django ran: none bypasses the driver's cursors."""
    prepare = OPERATIONS[operation]
    expected = statements_django_ran(prepare)
    assert otel_db_spans(prepare, otel) == expected
