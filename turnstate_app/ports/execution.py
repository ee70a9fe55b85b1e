"""Running one port statement: fully observable when anyone observes, at the driver floor otherwise.

When queries are logged (``DEBUG``, ``CaptureQueriesContext``, the debug toolbar) or an
execute wrapper is installed (tracing, SQL comments), the statement goes through
``connection.cursor()``: Django's whole path, so every observer sees it. When nobody is
observing, it runs on a cached driver cursor (on PostgreSQL a server-side-binding one
whose statements are prepared), still inside Django's connection management, thread
checks and error translation — what the ORM's wrapper would add costs more than the
statement itself on a fast database.
"""

from __future__ import annotations

import sys
from asyncio import _get_running_loop
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from threading import get_ident
from threading import local as _thread_local
from typing import Any

from django.conf import settings
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

from turnstate_app.conf import SETTINGS_READ, conf

_handler: Any = connections  # its ``_connections`` (the asgiref Local) is not in the stubs

# On each connection wrapper: (driver connection, its cursor, prepare?, conf.generation).
_GUARD_RECORD = "_turnstate_port_guard"


Outcome = tuple[int, Any, Any]
"""A statement's rowcount, its first row (None when it returns none) and the driver's lastrowid."""


def observed(connection: BaseDatabaseWrapper) -> bool:
    """Whether anyone logs or wraps this connection's queries: then every statement takes Django's path."""
    return bool(connection.queries_logged or connection.execute_wrappers)


def run_statement(
    connection: BaseDatabaseWrapper,
    portable_sql: str,
    native_sql: str,
    params: tuple[Any, ...],
    *,
    first_row: bool = True,
) -> tuple[int, Any]:
    """Execute one statement; return its rowcount and its first row (None when it has none).

    ``first_row=False`` (a write) fetches nothing: the row is always None.
    """
    debug = SETTINGS_READ.get("DEBUG")
    if debug is None:
        debug = settings.DEBUG
    # observed(): queries_logged (force_debug_cursor or DEBUG) or execute wrappers, inlined.
    if connection.force_debug_cursor or debug or connection.execute_wrappers:
        with connection.cursor() as cursor:
            cursor.execute(portable_sql, params)
            return int(cursor.rowcount), _first_row(cursor) if first_row else None
    try:
        _, cursor, prepare, _ = _guard_record(connection)
        if prepare:
            cursor.execute(native_sql, params, prepare=True)
        else:
            cursor.execute(native_sql, params)
        return int(cursor.rowcount), _first_row(cursor) if first_row else None
    except Exception:
        # Django's translation of driver errors, paid only when one is raised.
        with connection.wrap_database_errors:
            raise


def start_statement(
    connection: BaseDatabaseWrapper, portable_sql: str, native_sql: str, params: tuple[Any, ...]
) -> Callable[[], Outcome]:
    """Send one statement; the returned call gives its :data:`Outcome`.

    On PostgreSQL it goes on a cursor of its own: inside :func:`pipelined` the outcome is
    known only once the block has ended (the pipeline's one round trip), so it is read when
    asked, not when sent. Elsewhere it runs and is read at once: a write left unread
    (``INSERT … RETURNING``) is still in progress for SQLite, and a COMMIT sent on the driver
    would be refused.
    """
    if observed(connection):
        with connection.cursor() as logged:
            logged.execute(portable_sql, params)
            done = _outcome(logged)
        return lambda: done
    with connection.wrap_database_errors:
        cursor, prepare = ready_cursor(connection)
        if connection.vendor != "postgresql":
            cursor.execute(native_sql, params)
            ran = _outcome(cursor)
            return lambda: ran
        import psycopg

        own: Any = psycopg.Cursor(connection.connection)
        own.execute(native_sql, params, prepare=prepare or None)

    def outcome() -> Outcome:
        with connection.wrap_database_errors:
            return _outcome(own)

    return outcome


def _outcome(cursor: Any) -> Outcome:
    return int(cursor.rowcount), _first_row(cursor), getattr(cursor, "lastrowid", None)


@contextmanager
def pipelined(connection: BaseDatabaseWrapper) -> Iterator[None]:
    """Within the block, the port's statements on ``connection`` travel together where the driver can.

    On psycopg 3 they go in one pipeline: sent one after the other without waiting, answered
    in one round trip when the block ends. Each is still its own statement, executed in order
    in the caller's transaction; the first that fails raises when the block ends, and the
    server skips every later one. Elsewhere, and whenever the connection is observed, each
    runs when sent, as always.
    """
    if connection.vendor != "postgresql" or observed(connection) or not _pipelines_supported():
        yield
        return
    ready_cursor(connection)
    with connection.wrap_database_errors, connection.connection.pipeline():
        yield


def sends_whole_transactions(connection: BaseDatabaseWrapper) -> bool:
    """Whether :func:`transaction_in_one_round_trip` may run on ``connection`` now.

    On psycopg 3 with pipelines, and on SQLite, while nobody observes the connection (a
    logged query must be one Django saw), Django holds no transaction on it and it is in
    autocommit: then no one else's transaction state is touched by a BEGIN and COMMIT of
    our own, and no savepoint or ``on_commit`` callback can fall inside them.
    """
    if connection.in_atomic_block or observed(connection):
        return False
    if connection.vendor == "sqlite":
        return connection.get_autocommit()
    if connection.vendor != "postgresql":
        return False
    return _pipelines_supported() and connection.get_autocommit()


class NotCommittedError(Exception):
    """A transaction sent whole was refused and rolled back: nothing of it landed."""


@contextmanager
def transaction_in_one_round_trip(connection: BaseDatabaseWrapper) -> Iterator[None]:
    """BEGIN, the block's statements and COMMIT, on the driver: one round trip on PostgreSQL.

    ``atomic()`` costs three round trips on PostgreSQL (psycopg waits for its BEGIN's reply,
    the writes, the COMMIT); here they go in one psycopg pipeline. On SQLite, where there
    are no round trips, what it saves is ``atomic()``'s bookkeeping, which costs about as
    much as a small write. The transaction starts as Django's would (PostgreSQL: the
    connection's isolation level; SQLite: its ``transaction_mode``). When a statement or the
    COMMIT is refused on a live connection, the rest is skipped or rolled back, so this
    raises :class:`NotCommittedError` from it: nothing landed. A lost PostgreSQL connection
    raises as it is: the COMMIT may have landed. Call only when
    :func:`sends_whole_transactions` says so.
    """
    if connection.vendor == "sqlite":
        try:
            with sqlite_transaction(connection):
                yield
        except Exception as exc:
            raise NotCommittedError(str(exc)) from exc
        return
    ready_cursor(connection)
    driver = connection.connection
    begin = _begin_statement(driver.isolation_level)
    committed = False
    try:
        with connection.wrap_database_errors, driver.pipeline():
            driver.execute(begin)
            yield
            driver.execute("COMMIT")
        committed = True
    except Exception as exc:
        if driver.broken or driver.closed:
            raise
        raise NotCommittedError(str(exc)) from exc
    finally:
        if not committed and not (driver.broken or driver.closed):
            _roll_back_if_open(connection)


@contextmanager
def sqlite_transaction(connection: BaseDatabaseWrapper) -> Iterator[None]:
    """The transaction ``atomic()`` opens on SQLite (``BEGIN`` in the connection's
    ``transaction_mode``, then ``COMMIT``), sent on the driver without ``atomic()``'s
    bookkeeping, which costs about as much as a small write. Anything that fails in it rolls
    it back whole and is raised as it was. Call only when :func:`sends_whole_transactions`
    says so: then no savepoint, ``on_commit`` callback or statement of anyone else's can
    fall inside it.
    """
    cursor, _ = ready_cursor(connection)
    mode = getattr(connection, "transaction_mode", None)  # Django 5.1+: OPTIONS["transaction_mode"]
    driver = connection.connection
    with connection.wrap_database_errors:
        cursor.execute("BEGIN" if mode is None else f"BEGIN {mode}")
    try:
        yield
        with connection.wrap_database_errors:
            cursor.execute("COMMIT")
    finally:
        if driver.in_transaction:  # not committed: a statement, the block or the COMMIT failed
            driver.rollback()


def _begin_statement(isolation_level: Any) -> str:
    # psycopg's IsolationLevel names are SQL's with underscores (REPEATABLE_READ).
    if isolation_level is None:
        return "BEGIN"
    return f"BEGIN ISOLATION LEVEL {isolation_level.name.replace('_', ' ')}"


def _roll_back_if_open(connection: BaseDatabaseWrapper) -> None:
    from psycopg import pq

    driver = connection.connection
    if driver.info.transaction_status != pq.TransactionStatus.IDLE:
        with connection.wrap_database_errors:
            driver.execute("ROLLBACK")


@cache
def _pipelines_supported() -> bool:
    import psycopg

    return bool(psycopg.Pipeline.is_supported())


def _guard(connection: BaseDatabaseWrapper) -> None:
    """What Django's cursor checks before each statement, without the cursor."""
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    connection.validate_thread_sharing()
    connection.validate_no_broken_transaction()


def ready_cursor(connection: BaseDatabaseWrapper) -> tuple[Any, bool]:
    """Django's per-statement guards, then the connection's cached driver cursor and whether to prepare.

    For any statement of the app's own run on the driver (the port's, the LangGraph saver's):
    one cursor and one guard record per connection, whoever runs on it.
    """
    _, cursor, prepare, _ = _guard_record(connection)
    return cursor, prepare


def _guard_record(connection: BaseDatabaseWrapper) -> tuple[Any, Any, bool, int]:
    """Django's per-statement guards (:func:`_guard`), then the connection's guard record.

    The record kept on the connection, (driver connection, its cursor, prepare?, settings
    generation), says for which driver connection the cursor was built and under which
    settings. While the same driver connection is open, its health check (if enabled) is
    done for this request, it is used by the thread that made it, no transaction is broken,
    no event loop runs in this thread and no setting changed, each of Django's four checks
    would return without doing anything: then they are skipped. Otherwise every check runs,
    as Django's cursor runs them, and raises or reconnects exactly as it would.
    """
    wrapper: Any = connection  # attributes Django sets in __init__ and connect(), not in the stubs
    record = wrapper.__dict__.get(_GUARD_RECORD)
    if (
        record is not None
        and record[0] is wrapper.connection  # not None: a record is made for an open one
        and record[3] == conf.generation
        and wrapper._thread_ident == get_ident()
        and not wrapper.needs_rollback
        and (wrapper.health_check_done or not wrapper.health_check_enabled)
        and _get_running_loop() is None
    ):
        return record  # type: ignore[no-any-return]
    _guard(connection)
    _driver_cursor(connection)
    return wrapper.__dict__[_GUARD_RECORD]  # type: ignore[no-any-return]


def _first_row(cursor: Any) -> Any:
    return cursor.fetchone() if cursor.description else None


def _driver_cursor(connection: BaseDatabaseWrapper) -> tuple[Any, bool]:
    """The connection's cached driver cursor, rebuilt when the driver connection or the settings change."""
    driver = connection.connection
    generation = conf.generation
    record = connection.__dict__.get(_GUARD_RECORD)
    if record is not None and record[0] is driver and record[3] == generation:
        return record[1], record[2]
    prepare = connection.vendor == "postgresql" and conf.PREPARED_STATEMENTS
    if connection.vendor == "postgresql":
        import psycopg

        if prepare and driver.prepare_threshold is None:
            # Django turns preparation off (None) unless OPTIONS set it; a threshold no
            # ORM query reaches keeps it off for them while ``prepare=True`` works here.
            driver.prepare_threshold = sys.maxsize
        cursor = psycopg.Cursor(driver)
    else:
        cursor = driver.cursor()
    # Kept on the wrapper itself: one per thread and alias, as Django keeps connections.
    connection.__dict__[_GUARD_RECORD] = (driver, cursor, prepare, generation)
    return cursor, prepare


def connection_for(alias: str) -> BaseDatabaseWrapper:
    """Exactly the object ``connections[alias]`` gives in this thread or async context, found faster.

    ``connections`` keeps its wrappers in an asgiref ``Local`` that is thread-critical: in a
    thread without a running event loop it is a plain ``threading.local``, which asgiref
    finds by asking for the running loop and catching the ``RuntimeError`` each time. Here
    that case reads the ``threading.local`` directly; anything else (a running loop, a
    wrapper not made yet in this thread, another asgiref layout) goes through
    ``connections[alias]``.
    """
    if _get_running_loop() is None:
        storage = getattr(_handler._connections, "_storage", None)
        if type(storage) is _thread_local:
            found = storage.__dict__.get(alias)
            if found is not None:
                return found  # type: ignore[no-any-return]
    return connections[alias]
