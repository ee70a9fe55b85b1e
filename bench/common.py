"""What every bench script shares: the target database, Django's set-up, the port's SQL, timing, stats.

Kept in one place so every script measures the same way (same statements as the port, same
timer, same percentile) and its figures can be compared side by side. Scripts import it as
``bench.common`` after putting the repository root on ``sys.path``.
"""

from __future__ import annotations

import json
import os
import platform
import random
import sqlite3
import string
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"

TABLE = "turnstate_app_checkpointmetadata"
TASK_ID = "bench-task"

# The port's three statements, written out by hand (the port builds them from the model's _meta;
# ``check_statements`` asserts the two spellings are identical). ``%s`` is psycopg's placeholder.
# This is the SQLite and PostgreSQL spelling; on MariaDB/MySQL the floor runs the port's own
# statement (``statements_for``), whose value travels base64-encoded.
FLOOR_VENDORS = ("sqlite", "postgresql")
_COLUMNS = (
    '"thread_id", "checkpoint_id", "key", "value", "encryption_key_id", "value_mac", "task_id", '
    '"created_at", "updated_at"'
)
_VALUES = ", ".join(["%s"] * 9)
_CONFLICT = '"thread_id", "checkpoint_id", "key"'
SQL_READ = (
    f'SELECT "value", "encryption_key_id", "value_mac" FROM "{TABLE}" '
    'WHERE "thread_id" = %s AND "checkpoint_id" = %s AND "key" = %s'
)
SQL_WRITE = (
    f'INSERT INTO "{TABLE}" ({_COLUMNS}) VALUES ({_VALUES}) ON CONFLICT ({_CONFLICT}) DO UPDATE SET '
    '"value" = EXCLUDED."value", "encryption_key_id" = EXCLUDED."encryption_key_id", '
    '"value_mac" = EXCLUDED."value_mac", "task_id" = EXCLUDED."task_id", "updated_at" = EXCLUDED."updated_at"'
)
SQL_CLAIM = f'INSERT INTO "{TABLE}" ({_COLUMNS}) VALUES ({_VALUES}) ON CONFLICT ({_CONFLICT}) DO NOTHING'

FLOOR_MAC = "0" * 64
"""What the floor writes in the ``value_mac`` column: every column the port writes, no MAC computed
(the MAC's cost is part of what the port is measured for). The port refuses to read such a row
(``ChangedAtRestError``), so a row the port reads back is written with :func:`stored_params`."""


def stored_params(
    thread_id: str, checkpoint_id: str, key: str, value: str, task_id: str | None, now: Any
) -> tuple[Any, ...]:
    """The parameters of :data:`SQL_WRITE` for a row exactly as the port writes it: the value as
    stored, its key id and its real MAC. For seeds the port reads back; computed outside any timing."""
    from turnstate_app.ports.sealing import stored_row

    stored, key_id, mac = stored_row(thread_id, checkpoint_id, key, value)
    return (thread_id, checkpoint_id, key, stored, key_id, mac, task_id, now, now)


SQLITE_OPTIONS: dict[str, Any] = {
    "transaction_mode": "IMMEDIATE",
    "timeout": 20,
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
}

PG_SETTINGS = ("synchronous_commit", "fsync", "shared_buffers", "wal_level", "jit", "max_connections")

T = TypeVar("T")


def qmark(sql: str) -> str:
    """The same statement in sqlite3's ``?`` paramstyle."""
    return sql.replace("%s", "?")


# -- the database and Django ------------------------------------------------------------------------


@dataclass
class Target:
    vendor: str  # "sqlite", "postgresql" or "mysql", as Django names it
    django_db: dict[str, Any]
    conninfo: str = ""  # PostgreSQL: libpq conninfo of the bench database
    sqlite_path: str = ""
    tmpdir: str = ""
    mysql: dict[str, Any] | None = None  # MariaDB/MySQL: MySQLdb.connect() arguments


def make_mysql_target(database: str) -> Target:
    """A ``mysql://user@host:port/name`` URL: the bench's own MariaDB/MySQL database."""
    from urllib.parse import unquote, urlsplit

    url = urlsplit(database)
    name = url.path.lstrip("/")
    if not name:
        raise SystemExit("the MariaDB URL must name a database, e.g. .../turnstate_bench_lc")
    connect = {
        "host": url.hostname or "127.0.0.1",
        "port": url.port or 3306,
        "user": unquote(url.username or "root"),
        "password": unquote(url.password or ""),
        "database": name,
        "charset": "utf8mb4",
    }
    db = {
        "ENGINE": "django.db.backends.mysql",
        "NAME": name,
        "USER": connect["user"],
        "PASSWORD": connect["password"],
        "HOST": connect["host"],
        "PORT": str(connect["port"]),
        "OPTIONS": {"charset": "utf8mb4"},
    }
    return Target("mysql", db, mysql=connect)


def ensure_mysql_database(target: Target) -> None:
    """Create the bench database when it is missing."""
    import MySQLdb

    assert target.mysql is not None
    args = {k: v for k, v in target.mysql.items() if k != "database"}
    conn = MySQLdb.connect(**args)
    try:
        name = str(target.mysql["database"]).replace("`", "``")
        conn.cursor().execute(f"CREATE DATABASE IF NOT EXISTS `{name}` CHARACTER SET utf8mb4")
    finally:
        conn.close()


def make_target(
    database: str, prepare_threshold: int | None = None, *, server_side_binding: bool = False
) -> Target:
    """``sqlite`` (a fresh temporary file) or a ``postgres://`` URL naming the bench's own database."""
    if database == "sqlite":
        tmpdir = tempfile.mkdtemp(prefix="turnstate-bench-")
        path = os.path.join(tmpdir, "bench.sqlite3")
        db = {"ENGINE": "django.db.backends.sqlite3", "NAME": path, "OPTIONS": dict(SQLITE_OPTIONS)}
        return Target("sqlite", db, sqlite_path=path, tmpdir=tmpdir)
    if database.startswith("mysql://"):
        return make_mysql_target(database)
    if not database.startswith(("postgres://", "postgresql://")):
        raise SystemExit(f"--database must be 'sqlite', a postgres:// or a mysql:// URL, not {database!r}")
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(database)
    if not params.get("dbname"):
        raise SystemExit("the PostgreSQL URL must name a database, e.g. .../turnstate_bench")
    options: dict[str, Any] = {}
    if prepare_threshold is not None:
        options["prepare_threshold"] = prepare_threshold
    if server_side_binding:
        options["server_side_binding"] = True
    pg_db: dict[str, Any] = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": params["dbname"],
        "USER": str(params.get("user") or ""),
        "PASSWORD": str(params.get("password") or ""),
        "HOST": str(params.get("host") or ""),
        "PORT": str(params.get("port") or ""),
        "OPTIONS": options,
    }
    return Target("postgresql", pg_db, conninfo=make_conninfo("", **params))


def ensure_postgres_database(conninfo: str) -> None:
    """Create the bench database through the ``postgres`` maintenance database when it is missing."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(conninfo)
    name = str(params["dbname"])
    with psycopg.connect(make_conninfo(conninfo, dbname="postgres"), autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if exists is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def configure_django(
    target: Target, *, migrate: bool = True, extra_apps: Sequence[str] = (), **extra_settings: Any
) -> None:
    """A minimal project around the app: no settings module, so nothing else touches the database.

    ``extra_apps`` and ``extra_settings`` let one script add what it measures (DRF, say).
    """
    import django
    from django.conf import settings
    from django.core.management import call_command

    settings.configure(
        DEBUG=False,
        SECRET_KEY="turnstate-bench-only",
        USE_TZ=True,
        TIME_ZONE="UTC",
        INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "turnstate_app", *extra_apps],
        DATABASES={"default": target.django_db},
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
        **extra_settings,
    )
    django.setup()
    if migrate:
        call_command("migrate", verbosity=0, interactive=False)


def check_statements(vendor: str) -> None:
    """The floor runs exactly the port's SQL (after Django's %s -> ? rewrite on SQLite).

    On MariaDB/MySQL the floor runs the port's own statements, so there is nothing to compare.
    """
    from turnstate_app.ports.statements import statements_for

    if vendor not in FLOOR_VENDORS:
        return
    built = statements_for("default")
    for name, ours in (("read", SQL_READ), ("write", SQL_WRITE), ("claim", SQL_CLAIM)):
        theirs = getattr(built, name)
        if theirs != ours:
            raise SystemExit(
                f"bench SQL for {name!r} differs from the port's:\n  port:  {theirs}\n  bench: {ours}"
            )


def sqlite_connect(path: str, *, check_same_thread: bool = True) -> sqlite3.Connection:
    """A plain sqlite3 connection set up as Django sets up its own (autocommit, same pragmas)."""
    conn = sqlite3.connect(
        path, timeout=SQLITE_OPTIONS["timeout"], isolation_level=None, check_same_thread=check_same_thread
    )
    conn.execute("PRAGMA foreign_keys = ON")
    for pragma in SQLITE_OPTIONS["init_command"].split(";"):
        if pragma.strip():
            conn.execute(pragma)
    return conn


# -- timing ----------------------------------------------------------------------------------------


def timed_sync(fn: Callable[..., T], items: Sequence[tuple[Any, ...]]) -> tuple[list[int], list[T]]:
    """Each call ``fn(*item)`` timed on its own with ``perf_counter_ns``; results kept for checking."""
    clock = time.perf_counter_ns
    samples: list[int] = []
    results: list[T] = []
    for item in items:
        start = clock()
        result = fn(*item)
        samples.append(clock() - start)
        results.append(result)
    return samples, results


async def timed_async(
    fn: Callable[..., Awaitable[T]], items: Sequence[tuple[Any, ...]]
) -> tuple[list[int], list[T]]:
    """:func:`timed_sync` for coroutines, awaited one at a time."""
    clock = time.perf_counter_ns
    samples: list[int] = []
    results: list[T] = []
    for item in items:
        start = clock()
        result = await fn(*item)
        samples.append(clock() - start)
        results.append(result)
    return samples, results


def rotation(seq: Sequence[T], chunk_no: int, round_no: int = 0) -> list[T]:
    """The order contenders take turns in for one chunk.

    Rotated every chunk and reversed every other one, so drift on a shared machine falls on
    every contender alike.
    """
    shift = (round_no + chunk_no) % len(seq)
    order = list(seq[shift:]) + list(seq[:shift])
    if chunk_no % 2:
        order.reverse()
    return order


def make_values(value_bytes: int, count: int = 16) -> list[str]:
    """Incompressible ASCII values, so neither side gains from TOAST compression."""
    rng = random.Random(20240601)
    alphabet = string.ascii_letters + string.digits
    return ["".join(rng.choices(alphabet, k=value_bytes)) for _ in range(count)]


# -- statistics ------------------------------------------------------------------------------------


def median(xs: Sequence[int] | Sequence[float]) -> float:
    s = sorted(xs)
    m = len(s) // 2
    return float(s[m]) if len(s) % 2 else (s[m - 1] + s[m]) / 2


def percentile(xs: Sequence[int] | Sequence[float], q: float) -> float:
    """Nearest-rank percentile."""
    s = sorted(xs)
    rank = max(1, min(len(s), round(q / 100 * len(s) + 0.5)))
    return float(s[rank - 1])


def us(ns: float) -> float:
    return ns / 1000.0


def summary_us(samples_ns: Sequence[int]) -> dict[str, float]:
    """Median, p95, mean and min of nanosecond samples, in microseconds."""
    return {
        "median_us": us(median(samples_ns)),
        "p95_us": us(percentile(samples_ns, 95)),
        "mean_us": us(sum(samples_ns) / len(samples_ns)),
        "min_us": us(min(samples_ns)),
        "count": float(len(samples_ns)),
    }


# -- environment and output -----------------------------------------------------------------------


def busy_neighbours() -> list[str]:
    """Other benchmarks or test runs on this machine (they would share the cores and the server)."""
    import subprocess

    found = []
    for pattern in ("bench/ops.py", "pytest"):
        out = subprocess.run(["pgrep", "-af", pattern], capture_output=True, text=True, check=False).stdout
        found += [line for line in out.splitlines() if str(os.getpid()) != line.split(" ", 1)[0]]
    return [line for line in found if "pgrep" not in line]


def environment(target: Target, server_version: str, args: Any = None) -> dict[str, Any]:
    """Versions, CPUs, load and database settings: what a reader needs to weigh the figures."""
    import asgiref
    import django
    from django.conf import settings
    from django.db import connection

    env: dict[str, Any] = {
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "django": django.get_version(),
        "asgiref": asgiref.__version__,
        "sqlite3_library": sqlite3.sqlite_version,
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "loadavg_start": list(os.getloadavg()),
        "busy_neighbours_start": busy_neighbours(),
        "database_server": server_version,
        "vendor": target.vendor,
        "databases_default": {k: v for k, v in settings.DATABASES["default"].items() if k != "PASSWORD"},
    }
    if args is not None:
        env["args"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    try:
        import psycopg

        env["psycopg"] = psycopg.__version__
        env["psycopg_impl"] = psycopg.pq.__impl__
        env["libpq"] = psycopg.pq.version()
    except ImportError:
        env["psycopg"] = None
    if target.vendor == "postgresql":
        connection.ensure_connection()
        env["django_connection_prepare_threshold"] = connection.connection.prepare_threshold
        with connection.cursor() as cur:
            for name in (
                "synchronous_commit",
                "fsync",
                "shared_buffers",
                "wal_level",
                "jit",
                "max_connections",
            ):
                cur.execute(f"SHOW {name}")
                row = cur.fetchone()
                env[f"pg_{name}"] = row[0] if row else None
    if target.vendor == "mysql":
        from django.db import DatabaseError

        for name in MYSQL_SETTINGS:
            try:
                with connection.cursor() as cur:
                    cur.execute(f"SELECT @@{name}")
                    row = cur.fetchone()
            except DatabaseError:  # named differently in this server's version
                continue
            env[f"mysql_{name}"] = row[0] if row else None
    return env


MYSQL_SETTINGS = (
    "innodb_flush_log_at_trx_commit",
    "sync_binlog",
    "log_bin",
    "transaction_isolation",  # MariaDB 11.1+ and MySQL
    "tx_isolation",  # MariaDB before 11.1
    "innodb_buffer_pool_size",
)


def pg_server_version(conninfo: str) -> str:
    import psycopg

    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute("SELECT version()").fetchone()
    return str(row[0]) if row else "?"


def server_version(target: Target) -> str:
    if target.vendor == "mysql":
        import MySQLdb

        assert target.mysql is not None
        conn = MySQLdb.connect(**target.mysql)
        try:
            cur = conn.cursor()
            cur.execute("SELECT VERSION()")
            row = cur.fetchone()
        finally:
            conn.close()
        return f"MariaDB/MySQL {row[0] if row else '?'}"
    return (
        pg_server_version(target.conninfo)
        if target.vendor == "postgresql"
        else f"SQLite {sqlite3.sqlite_version}"
    )


def finish_environment(env: dict[str, Any], started: float) -> None:
    env["loadavg_end"] = list(os.getloadavg())
    env["busy_neighbours_end"] = busy_neighbours()
    env["duration_s"] = round(time.monotonic() - started, 1)


def write_json(path: Path, result: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(f"wrote {path}")


def pg_protocol_counts(pgconn: Any, call: Callable[[], object]) -> dict[str, int]:
    """What one call exchanges with the server, from libpq's own protocol trace of ``pgconn``.

    ``statements`` counts Execute and simple Query messages (BEGIN and COMMIT included);
    ``round_trips`` counts ReadyForQuery replies, one per synchronisation the client waits
    for; ``parses`` counts statements parsed on the server (0 when a prepared one was reused);
    ``commits`` counts transactions that committed: each COMMIT, and each INSERT, UPDATE or
    DELETE run outside a transaction block (autocommit), told apart by the server's replies.
    """
    from collections import Counter

    from psycopg import pq

    with tempfile.TemporaryFile("w+") as trace:
        pgconn.trace(trace.fileno())
        pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        try:
            call()
        finally:
            pgconn.untrace()
        trace.seek(0)
        lines = [f for line in trace if len(f := line.rstrip("\n").split("\t")) > 2]
    kinds = Counter((f[0], f[2].strip()) for f in lines)
    return {
        "statements": kinds[("F", "Execute")] + kinds[("F", "Query")],
        "round_trips": kinds[("B", "ReadyForQuery")],
        "parses": kinds[("F", "Parse")],
        "commits": _commits(
            (f[2].strip(), f[3].strip().strip('"') if len(f) > 3 else "") for f in lines if f[0] == "B"
        ),
    }


WRITES = ("INSERT", "UPDATE", "DELETE", "MERGE")


def _commits(replies: Any) -> int:
    """Commits in a stream of (message, detail) server replies: see :func:`pg_protocol_counts`."""
    commits, in_block = 0, False
    for message, detail in replies:
        if message == "ReadyForQuery":
            in_block = detail in ("T", "E")
        elif message == "CommandComplete":
            tag = detail.split(" ", 1)[0].upper()
            if tag in ("BEGIN", "START"):
                in_block = True
            elif tag in ("COMMIT", "ROLLBACK"):
                commits += tag == "COMMIT"
                in_block = False
            elif tag in WRITES and not in_block:
                commits += 1
    return commits


def sqlite_statement_counts(driver: sqlite3.Connection, call: Callable[[], object]) -> dict[str, int]:
    """What one call has SQLite execute (BEGIN and COMMIT included), from its trace callback.

    SQLite runs in the process, so there are no round trips: ``statements`` counts what the
    engine ran, ``commits`` as for PostgreSQL (each COMMIT, each write in autocommit).
    """
    ran: list[str] = []
    driver.set_trace_callback(ran.append)
    try:
        call()
    finally:
        driver.set_trace_callback(None)
    commits, in_block = 0, False
    for sql in ran:
        words = sql.split(None, 2)
        tag = words[0].upper() if words else ""
        if tag == "BEGIN":
            in_block = True
        elif tag in ("COMMIT", "END") or (tag == "ROLLBACK" and words[1:2] != ["TO"]):
            commits += tag != "ROLLBACK"
            in_block = False
        elif tag in WRITES and not in_block:
            commits += 1
    return {"statements": len(ran), "commits": commits}


MYSQL_COUNTERS = ("Questions", "Com_commit", "Com_insert", "Com_update", "Com_delete")


def mysql_statement_counts(driver: Any, call: Callable[[], object]) -> dict[str, int]:
    """What one call sends MariaDB/MySQL, from the session's own status counters.

    ``round_trips`` is the change in ``Questions`` (every statement the client sent, each
    one round trip with this driver, ``SET autocommit`` included), less the status query
    itself. ``commits``: the COMMIT statements (``Com_commit``); a call that sent none but
    wrote ran in autocommit, one commit per INSERT, UPDATE or DELETE.
    """
    names = ", ".join(f"'{name}'" for name in MYSQL_COUNTERS)

    def counters() -> dict[str, int]:
        cur = driver.cursor()
        try:
            cur.execute(f"SHOW SESSION STATUS WHERE Variable_name IN ({names})")
            return {str(name): int(value) for name, value in cur.fetchall()}
        finally:
            cur.close()

    before = counters()
    call()
    after = counters()
    delta = {name: after[name] - before[name] for name in MYSQL_COUNTERS}
    writes = delta["Com_insert"] + delta["Com_update"] + delta["Com_delete"]
    return {
        "round_trips": delta["Questions"] - 1,
        "commits": delta["Com_commit"] or writes,
        "writes": writes,
    }


def make_transcript(size: int, variant: int = 0) -> tuple[str, list[dict[str, Any]]]:
    """A prompt and a chat transcript whose turn-state record encodes to about ``size`` bytes.

    Random ASCII content (nothing compresses it) spread over one message per ~1 KB, between
    4 and 200 messages, alternating user and assistant: the shape agent transcripts have.
    """
    rng = random.Random(7919 * (variant + 1) + size)
    alphabet = string.ascii_letters + string.digits + " "
    count = max(4, min(200, size // 1000))
    body = max(8, (size - 300) // count - 36)
    messages: list[dict[str, Any]] = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": "".join(rng.choices(alphabet, k=body))}
        for i in range(count)
    ]
    return "Which date suits you for the flight?", messages
