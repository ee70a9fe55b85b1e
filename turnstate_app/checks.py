"""System checks: bad wiring is refused at start-up, not found when a person answers."""

from __future__ import annotations

import importlib.util
import inspect
import math
from typing import Any
from urllib.parse import urlsplit

from django.apps import apps
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.checks import CheckMessage, Error, Warning
from django.db import router
from django.utils.module_loading import import_string

from turnstate_app.agents import FRAMEWORKS, import_agent, name_of
from turnstate_app.conf import DEFAULTS, conf
from turnstate_app.contracts import CheckpointCommandPort

PORT_METHODS = ("read_metadata", "write_metadata", "claim_metadata")
RETIRED_PREPARED_STATEMENTS = "PREPARED_STATEMENTS"
"""A key of earlier releases (E008 checked it); W004 says where the choice lives now."""


def check_settings(**_: Any) -> list[CheckMessage]:
    """Every problem with ``settings.TURNSTATE``, each with its own id and a hint."""
    raw = conf.raw
    if not isinstance(raw, dict):
        return [
            Error(
                f"TURNSTATE must be a dict, not {type(raw).__name__}.",
                hint="Set TURNSTATE = {...} with the keys of docs/settings-and-checks.md, or remove it.",
                id="turnstate.E001",
            )
        ]
    messages: list[CheckMessage] = []
    if RETIRED_PREPARED_STATEMENTS in raw:
        messages.append(
            Warning(
                f"TURNSTATE[{RETIRED_PREPARED_STATEMENTS!r}] no longer has any effect.",
                hint=(
                    "The app's statements run on Django's own cursor, so PostgreSQL prepares them "
                    "exactly as Django's database OPTIONS say (psycopg 3: 'server_side_binding' and "
                    "'prepare_threshold'). Remove the key and set those OPTIONS instead."
                ),
                id="turnstate.W004",
            )
        )
    unknown = sorted(set(raw) - set(DEFAULTS) - {RETIRED_PREPARED_STATEMENTS})
    if unknown:
        messages.append(
            Warning(
                f"TURNSTATE has unknown keys: {', '.join(map(str, unknown))}.",
                hint=f"Known keys: {', '.join(DEFAULTS)}. A misspelt key is silently ignored.",
                id="turnstate.W001",
            )
        )
    messages += _check_port(raw)
    messages += _check_flags(raw)
    messages += _check_sizes(raw)
    messages += _check_handler(raw)
    messages += _check_handoff_timeout(raw)
    messages += _check_stalled_after(raw)
    messages += _check_continuation_attempts(raw)
    messages += _check_agents(raw)
    messages += _check_encryption(raw)
    messages += _check_notify(raw)
    return messages


def _check_port(raw: dict[str, Any]) -> list[CheckMessage]:
    path = raw.get("PORT", DEFAULTS["PORT"])
    try:
        port_class = import_string(path) if isinstance(path, str) else None
    except ImportError as exc:
        port_class = None
        detail = str(exc)
    else:
        detail = "not a dotted path" if port_class is None else ""
    if port_class is None:
        return [
            Error(
                f"TURNSTATE['PORT'] = {path!r} cannot be imported ({detail}).",
                hint="Give the dotted path of a port class, e.g. "
                "'turnstate_app.ports.ModelCheckpointCommandPort'.",
                id="turnstate.E002",
            )
        ]
    problem = _port_problem(port_class)
    if problem is not None:
        return [
            Error(
                f"TURNSTATE['PORT'] = {path!r} is not a checkpoint command port: {problem}.",
                hint="A port needs a no-argument constructor, a bool `durable` and async "
                "read_metadata, write_metadata and claim_metadata (turnstate_app.contracts).",
                id="turnstate.E003",
            )
        ]
    durable = port_class().durable
    require = raw.get("REQUIRE_DURABLE", DEFAULTS["REQUIRE_DURABLE"])
    if require is True and not durable:
        return [
            Error(
                f"TURNSTATE['PORT'] = {path!r} is volatile (durable=False) but "
                "REQUIRE_DURABLE is True: its pauses would not survive a restart.",
                hint="Use turnstate_app.ports.ModelCheckpointCommandPort, or set "
                "REQUIRE_DURABLE to False where losing pauses is acceptable (tests, demos).",
                id="turnstate.E004",
            )
        ]
    return []


def _port_problem(port_class: Any) -> str | None:
    """Why instances of ``port_class`` cannot serve as a port, or None when they can."""
    try:
        port = port_class()
    except Exception as exc:  # any failure to construct is the finding itself
        return f"constructing it with no arguments failed ({type(exc).__name__}: {exc})"
    if not isinstance(port, CheckpointCommandPort):
        missing = [name for name in ("durable", *PORT_METHODS) if not hasattr(port, name)]
        return f"it lacks {', '.join(missing)}"
    not_async = [name for name in PORT_METHODS if not inspect.iscoroutinefunction(getattr(port, name))]
    if not_async:
        return f"{', '.join(not_async)} must be async (coroutine functions)"
    if not isinstance(port.durable, bool):
        return f"`durable` must be a bool, not {type(port.durable).__name__}"
    return None


def _check_flags(raw: dict[str, Any]) -> list[CheckMessage]:
    return [
        Error(
            f"TURNSTATE[{name!r}] must be True or False, not {raw[name]!r}.",
            hint=f"Set {name} to a bool (default {DEFAULTS[name]}).",
            id=check_id,
        )
        for name, check_id in (("REQUIRE_DURABLE", "turnstate.E005"),)
        if name in raw and not isinstance(raw[name], bool)
    ]


def _check_sizes(raw: dict[str, Any]) -> list[CheckMessage]:
    return [
        Error(
            f"TURNSTATE[{name!r}] must be a positive integer, not {raw[name]!r}.",
            hint=f"Set {name} to a whole number of {unit} (default {DEFAULTS[name]}).",
            id=check_id,
        )
        for name, unit, check_id in (
            ("TOKEN_MAX_AGE", "seconds", "turnstate.E006"),
            ("MAX_VALUE_BYTES", "bytes", "turnstate.E007"),
        )
        if name in raw and (isinstance(raw[name], bool) or not isinstance(raw[name], int) or raw[name] <= 0)
    ]


def _check_handler(raw: dict[str, Any]) -> list[CheckMessage]:
    path = raw.get("RESUME_HANDLER")
    if path is None:
        return []
    try:
        handler = import_string(path) if isinstance(path, str) else None
    except ImportError as exc:
        handler, detail = None, str(exc)
    else:
        detail = "not a dotted path" if handler is None else "not callable"
    if handler is None or not callable(handler):
        return [
            Error(
                f"TURNSTATE['RESUME_HANDLER'] = {path!r} is unusable ({detail}).",
                hint="Give the dotted path of a callable taking a ResumedPause, or None.",
                id="turnstate.E009",
            )
        ]
    return []


def _check_handoff_timeout(raw: dict[str, Any]) -> list[CheckMessage]:
    if "HANDOFF_TIMEOUT" not in raw:
        return []
    value = raw["HANDOFF_TIMEOUT"]
    if not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value) and value >= 0:
        return []
    return [
        Error(
            f"TURNSTATE['HANDOFF_TIMEOUT'] must be a number of seconds, zero or more, not {value!r}.",
            hint="Set HANDOFF_TIMEOUT to how long an answer may wait for RESUME_HANDLER "
            f"(default {DEFAULTS['HANDOFF_TIMEOUT']}; 0: never wait, the handler runs in the background).",
            id="turnstate.E010",
        )
    ]


def _check_stalled_after(raw: dict[str, Any]) -> list[CheckMessage]:
    if "STALLED_AFTER" not in raw:
        return []
    value = raw["STALLED_AFTER"]
    if not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value) and value > 0:
        return []
    return [
        Error(
            f"TURNSTATE['STALLED_AFTER'] must be a positive number of seconds, not {value!r}.",
            hint="Set STALLED_AFTER above the longest continuation a run takes (default "
            f"{DEFAULTS['STALLED_AFTER']}): a claimed continuation older than that is listed as stalled, "
            "and a thread's turn held that long is taken over.",
            id="turnstate.E014",
        )
    ]


def _check_continuation_attempts(raw: dict[str, Any]) -> list[CheckMessage]:
    if "CONTINUATION_ATTEMPTS" not in raw:
        return []
    value = raw["CONTINUATION_ATTEMPTS"]
    if not isinstance(value, bool) and isinstance(value, int) and 1 <= value <= 100:
        return []
    return [
        Error(
            f"TURNSTATE['CONTINUATION_ATTEMPTS'] must be a whole number from 1 to 100, not {value!r}.",
            hint="Set CONTINUATION_ATTEMPTS to how often a continuation that failed before running "
            f"anything is tried by itself (default {DEFAULTS['CONTINUATION_ATTEMPTS']}); after the last, "
            "turnstate_redeliver hands it again.",
            id="turnstate.E022",
        )
    ]


def _check_agents(raw: dict[str, Any]) -> list[CheckMessage]:
    """E015: not a dict of names to paths. E016: a path that does not import. E017: a name that
    is not the object's own (the task would refuse every pause it is meant for)."""
    agents = raw.get("AGENTS", {})
    if not isinstance(agents, dict) or not all(isinstance(name, str) and name for name in agents):
        return [
            Error(
                f"TURNSTATE['AGENTS'] must be a dict of names to dotted paths, not {agents!r}.",
                hint="Set AGENTS = {'trip_planner': 'myproject.agents.trip_planner'}: each key the "
                "name a pause records (graph.name / agent.name), each value where that object lives.",
                id="turnstate.E016",
            )
        ]
    messages: list[CheckMessage] = []
    for name, path in agents.items():
        try:
            target = import_agent(name, path)
        except Exception as exc:  # an import that fails in any way is the finding
            detail = str(exc) if isinstance(exc, ImportError) else f"{path!r} fails to import ({exc!r})"
            messages.append(
                Error(
                    f"TURNSTATE['AGENTS']: {detail}.",
                    hint="Give the dotted path of a module-level compiled graph or agent, and install "
                    "its framework's extra (turnstate-app[langgraph], [pydantic-ai] or [openai-agents]).",
                    id="turnstate.E017",
                )
            )
            continue
        if name_of(target) != name:
            messages.append(
                Error(
                    f"TURNSTATE['AGENTS'][{name!r}] = {path!r} is named {name_of(target)!r}, not {name!r}: "
                    "its pauses record its own name, so none would ever be continued under this key.",
                    hint=f"Use the object's name as the key, or name it {name!r} where it is built "
                    f"(builder.compile(name={name!r}), Agent(..., name={name!r})).",
                    id="turnstate.E018",
                )
            )
    return messages


def _check_encryption(raw: dict[str, Any]) -> list[CheckMessage]:
    """E019: a key that ``Fernet`` refuses (its rule, not a copy of it). E020: keys without
    ``cryptography``. E021: a key ring that does not import. Never a table scan: rows still
    clear are ``turnstate_rotate_keys --dry-run``'s."""
    from turnstate_app.encryption import GENERATE_KEY, key_problem

    keys = raw.get("ENCRYPTION_KEYS", [])
    ring = raw.get("ENCRYPTION_KEY_RING")
    messages: list[CheckMessage] = []
    if not isinstance(keys, list | tuple):
        problems = [f"must be a list of keys, not {type(keys).__name__}"]
    else:
        problems = [
            f"key #{n} {problem}" for n, key in enumerate(keys) for problem in [key_problem(key)] if problem
        ]
    if problems:
        messages.append(
            Error(
                f"TURNSTATE['ENCRYPTION_KEYS']: {'; '.join(problems)}.",
                hint="Each key is a Fernet key (32 url-safe base64-encoded bytes); make one with: "
                + GENERATE_KEY,
                id="turnstate.E019",
            )
        )
    if ring is not None:
        detail = _why_not_callable(ring)
        if detail is not None:
            messages.append(
                Error(
                    f"TURNSTATE['ENCRYPTION_KEY_RING'] = {ring!r} is unusable ({detail}).",
                    hint="Give the dotted path of a callable(thread_id) -> a non-empty list[str] of "
                    "Fernet keys (the first encrypts, every one decrypts), or None to use ENCRYPTION_KEYS.",
                    id="turnstate.E021",
                )
            )
    if (keys or ring is not None) and not _importable("cryptography"):
        messages.append(
            Error(
                "TURNSTATE sets encryption keys, but the 'cryptography' package is not installed: "
                "no value could be written or read.",
                hint="pip install 'turnstate-app[encryption]', or remove ENCRYPTION_KEYS and "
                "ENCRYPTION_KEY_RING.",
                id="turnstate.E020",
            )
        )
    return messages


def _why_not_callable(path: Any) -> str | None:
    """Why the setting ``path`` names no callable (None: it imports one)."""
    try:
        target = import_string(path) if isinstance(path, str) else None
    except ImportError as exc:
        return str(exc)
    if target is None:
        return "not a dotted path"
    return None if callable(target) else "not callable"


def _check_notify(raw: dict[str, Any]) -> list[CheckMessage]:
    """E023: a NOTIFY that cannot be called. E024: NOTIFY without PAGES_BASE_URL (a mint in a
    worker has no request to take the site's address from). E025: a PAGES_BASE_URL that would
    make links nobody can open."""
    path, base = raw.get("NOTIFY"), raw.get("PAGES_BASE_URL")
    messages: list[CheckMessage] = []
    if path is not None:
        detail = _why_not_callable(path)
        if detail is not None:
            messages.append(
                Error(
                    f"TURNSTATE['NOTIFY'] = {path!r} is unusable ({detail}).",
                    hint="Give the dotted path of a callable(pause, link), e.g. "
                    "'turnstate_app.notify.email_owner', or None.",
                    id="turnstate.E023",
                )
            )
        if base is None:
            messages.append(
                Error(
                    "TURNSTATE['NOTIFY'] is set but TURNSTATE['PAGES_BASE_URL'] is not: the link it "
                    "is given must be absolute, and a pause minted by a worker has no request to "
                    "take the site's address from.",
                    hint="Set PAGES_BASE_URL to the site's origin, e.g. 'https://app.example.com'.",
                    id="turnstate.E024",
                )
            )
    if base is not None and not _absolute_http_url(base):
        messages.append(
            Error(
                f"TURNSTATE['PAGES_BASE_URL'] = {base!r} is not an absolute http(s) URL.",
                hint="Give the origin people open the site at, with its scheme and without a query "
                "or fragment, e.g. 'https://app.example.com'.",
                id="turnstate.E025",
            )
        )
    return messages


def _absolute_http_url(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        parts = urlsplit(value)
    except ValueError:  # an unbalanced IPv6 bracket, say
        return False
    return parts.scheme in {"http", "https"} and bool(parts.hostname) and not (parts.query or parts.fragment)


def _importable(name: str) -> bool:
    """Whether ``name`` can be imported, found without importing it (``find_spec`` imports a dotted
    name's parent package only): a check must not pay for loading a framework to see it is there."""
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False


def check_contrib_migrations(databases: Any = None, **_: Any) -> list[CheckMessage]:
    """W005: an installed integration whose tables are not migrated yet (a database check).

    Run by ``check --database default`` and by ``migrate`` before it migrates: a warning, so
    it never blocks the ``migrate`` that fixes it, and says why ``graph.invoke`` would fail.
    """
    if not databases:
        return []
    from django.apps import apps
    from django.db import connections
    from django.db.migrations.loader import MigrationLoader

    contribs = [c.label for c in apps.get_app_configs() if c.name.startswith("turnstate_app.contrib.")]
    messages: list[CheckMessage] = []
    for alias in databases:
        labels = [label for label in contribs if router.allow_migrate(alias, label)]
        if not labels:
            continue
        loader = MigrationLoader(connections[alias], ignore_no_migrations=True)
        for label in labels:
            unapplied = sorted(
                {
                    f"{app}.{migration}"
                    for leaf in loader.graph.leaf_nodes(label)
                    for app, migration in loader.graph.forwards_plan(leaf)
                    if app == label and (app, migration) not in loader.applied_migrations
                }
            )
            if unapplied:
                messages.append(
                    Warning(
                        f"{label} (installed) has unapplied migrations on database {alias!r}: "
                        f"{', '.join(unapplied)}; its tables are missing until they are applied.",
                        hint="Run `python manage.py migrate` (all apps, not `migrate turnstate_app` "
                        "alone): expected before the first migrate, which this warning never blocks.",
                        id="turnstate.W005",
                    )
                )
    return messages


def check_packet_limit(databases: Any = None, **_: Any) -> list[CheckMessage]:
    """MariaDB/MySQL: an error when a value of ``MAX_VALUE_BYTES`` cannot fit the server's packet.

    Such a value would be refused at every write, though the settings promise to store it. A
    database check (``manage.py check --database default``, and ``migrate``): it asks the
    server, so it runs only when Django lets checks reach the database.
    """
    if not databases:
        return []
    from django.db import connections, router

    from turnstate_app.encryption import encryption_configured, largest_sealable, sealed_length
    from turnstate_app.models import CheckpointMetadata
    from turnstate_app.ports.packets import largest_fitting_value, packet_limit, required_packet

    alias = router.db_for_write(CheckpointMetadata)
    if alias not in databases or connections[alias].vendor != "mysql":
        return []
    limit = packet_limit(connections[alias])
    encrypted = encryption_configured()  # a value then travels as its (longer) token
    needed = required_packet(sealed_length(conf.MAX_VALUE_BYTES) if encrypted else conf.MAX_VALUE_BYTES)
    if needed <= limit:
        return []
    fitting = largest_fitting_value(limit)
    fitting = largest_sealable(fitting) if encrypted else fitting
    return [
        Error(
            f"TURNSTATE['MAX_VALUE_BYTES'] = {conf.MAX_VALUE_BYTES} does not fit database {alias!r}: "
            f"a write of a value that size takes up to {needed} bytes, and the server's "
            f"max_allowed_packet is {limit}.",
            hint=f"Set max_allowed_packet={needed} or more on the server (the [mysqld] section of its "
            f"configuration, or SET GLOBAL max_allowed_packet={needed}), or lower "
            f"TURNSTATE['MAX_VALUE_BYTES'] to {fitting} or less; until then such "
            "values are refused with a field error.",
            id="turnstate.E015",
        )
    ]


def check_databases(**_: Any) -> list[CheckMessage]:
    """The app's routing: the ledger beside the user table, and the ledger beside the store.

    ``Pause.owner`` is a foreign key to the user model, which Django cannot hold across
    databases (migrate would fail creating it); and a resume consumes the ledger row and
    stores the answer in one transaction, which cannot span two databases.
    """
    from turnstate_app.models import CheckpointMetadata, Pause

    user_model = get_user_model()
    ledger = router.db_for_write(Pause)
    users = router.db_for_write(user_model)
    without_users = [
        alias
        for alias in settings.DATABASES
        if router.allow_migrate_model(alias, Pause) and not router.allow_migrate_model(alias, user_model)
    ]
    messages: list[CheckMessage] = []
    if ledger != users or without_users:
        where = f"database {without_users[0]!r}" if without_users else f"database {ledger!r}"
        messages.append(
            Error(
                f"DATABASE_ROUTERS put turnstate_app's Pause in {where} without the user table "
                f"({user_model._meta.label} is written to {users!r}): Pause.owner is a foreign key to it.",
                hint="Route turnstate_app to the database that holds the user model (both for writes "
                "and in allow_migrate), or route the user model along with it.",
                id="turnstate.E012",
            )
        )
    store = router.db_for_write(CheckpointMetadata)
    if store != ledger:
        messages.append(
            Error(
                f"DATABASE_ROUTERS write turnstate_app's Pause to {ledger!r} and CheckpointMetadata to "
                f"{store!r}: a resume consumes the pause and stores the answer in one transaction.",
                hint="Route every model of turnstate_app to the same database.",
                id="turnstate.E013",
            )
        )
    return messages


def check_integrations(**_: Any) -> list[CheckMessage]:
    """E026: an integration in ``INSTALLED_APPS`` whose framework is not installed.

    An integration imports its framework when it first runs, not when Django starts (a process
    that never uses it does not pay for the import), so a missing framework is found here rather
    than by the first pause a worker tries to continue.
    """
    messages: list[CheckMessage] = []
    for framework, (contrib, extra) in FRAMEWORKS.items():
        if apps.is_installed(contrib) and not _importable(framework):
            messages.append(
                Error(
                    f"{contrib!r} is in INSTALLED_APPS, but its framework ({framework!r}) is not installed.",
                    hint=f"pip install 'turnstate-app[{extra}]', or take {contrib!r} out of INSTALLED_APPS.",
                    id="turnstate.E026",
                )
            )
    return messages
