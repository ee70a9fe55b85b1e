"""One test per system check id, and one through ``manage.py check``."""

from __future__ import annotations

import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from tests.legs import SQLITE_LEGS_ONLY
from turnstate_app.checks import check_settings


class NoArgsFails:
    def __init__(self, required: str) -> None: ...


class SyncPort:
    durable = True

    def read_metadata(self, **kwargs: Any) -> None: ...
    def write_metadata(self, **kwargs: Any) -> None: ...
    def claim_metadata(self, **kwargs: Any) -> None: ...


class StringDurablePort:
    durable = "yes"

    async def read_metadata(self, **kwargs: Any) -> None: ...
    async def write_metadata(self, **kwargs: Any) -> None: ...
    async def claim_metadata(self, **kwargs: Any) -> None: ...


def ids(turnstate_settings: Any, value: Any) -> list[str]:
    turnstate_settings.replace(value)
    return [str(message.id) for message in check_settings()]


def test_defaults_pass(turnstate_settings: Any) -> None:
    assert ids(turnstate_settings, {}) == []
    turnstate_settings.remove()
    assert check_settings() == []


def test_e001_not_a_dict(turnstate_settings: Any) -> None:
    assert ids(turnstate_settings, ["PORT"]) == ["turnstate.E001"]


def test_w001_unknown_key(turnstate_settings: Any) -> None:
    assert ids(turnstate_settings, {"TOKEN_MAXAGE": 5}) == ["turnstate.W001"]


@pytest.mark.parametrize("path", ["no.such.Module", "turnstate_app.ports.Nope", 42])
def test_e002_port_unimportable(turnstate_settings: Any, path: Any) -> None:
    assert ids(turnstate_settings, {"PORT": path}) == ["turnstate.E002"]


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("tests.test_checks.NoArgsFails", "no arguments failed"),
        ("builtins.object", "lacks durable, read_metadata"),
        ("tests.test_checks.SyncPort", "must be async"),
        ("tests.test_checks.StringDurablePort", "must be a bool"),
    ],
)
def test_e003_port_breaks_the_protocol(turnstate_settings: Any, path: str, problem: str) -> None:
    turnstate_settings.replace({"PORT": path})
    [message] = check_settings()
    assert message.id == "turnstate.E003"
    assert problem in message.msg
    assert message.hint


def test_e004_volatile_port_while_durability_required(turnstate_settings: Any) -> None:
    memory = "turnstate_app.ports.InMemoryCheckpointCommandPort"
    assert ids(turnstate_settings, {"PORT": memory}) == ["turnstate.E004"]
    assert ids(turnstate_settings, {"PORT": memory, "REQUIRE_DURABLE": False}) == []


def test_e005_require_durable_not_bool(turnstate_settings: Any) -> None:
    assert ids(turnstate_settings, {"REQUIRE_DURABLE": "yes"}) == ["turnstate.E005"]


@pytest.mark.parametrize("value", [0, -1, "60", 1.5, True, None])
def test_e006_bad_token_max_age(turnstate_settings: Any, value: Any) -> None:
    assert ids(turnstate_settings, {"TOKEN_MAX_AGE": value}) == ["turnstate.E006"]


@pytest.mark.parametrize("value", [0, -5, "8MB", None])
def test_e007_bad_max_value_bytes(turnstate_settings: Any, value: Any) -> None:
    assert ids(turnstate_settings, {"MAX_VALUE_BYTES": value}) == ["turnstate.E007"]


@pytest.mark.parametrize("value", [False, True, 1])
def test_w004_prepared_statements_is_retired(turnstate_settings: Any, value: Any) -> None:
    """The retired key is named as such (not as an unknown, misspelt key), whatever its value."""
    assert ids(turnstate_settings, {"PREPARED_STATEMENTS": value}) == ["turnstate.W004"]


@pytest.mark.parametrize("path", ["no.such.handler", "turnstate_app.__version__", 3])
def test_e009_unusable_resume_handler(turnstate_settings: Any, path: Any) -> None:
    assert ids(turnstate_settings, {"RESUME_HANDLER": path}) == ["turnstate.E009"]


def test_a_callable_resume_handler_passes(turnstate_settings: Any) -> None:
    assert ids(turnstate_settings, {"RESUME_HANDLER": "logging.info"}) == []


@pytest.mark.parametrize("value", [-1, "5", True, None, float("nan"), float("inf")])
def test_e010_handoff_timeout_not_a_non_negative_number(turnstate_settings: Any, value: Any) -> None:
    assert ids(turnstate_settings, {"HANDOFF_TIMEOUT": value}) == ["turnstate.E010"]


@pytest.mark.parametrize("value", [0, 0.5, 30])
def test_a_handoff_timeout_in_seconds_passes(turnstate_settings: Any, value: Any) -> None:
    assert ids(turnstate_settings, {"HANDOFF_TIMEOUT": value}) == []


@pytest.mark.parametrize("value", [0, -1, 101, 2.5, "3", True, None])
def test_e022_continuation_attempts_not_a_whole_number_from_1_to_100(
    turnstate_settings: Any, value: Any
) -> None:
    assert ids(turnstate_settings, {"CONTINUATION_ATTEMPTS": value}) == ["turnstate.E022"]


@pytest.mark.parametrize("value", [1, 3, 100])
def test_continuation_attempts_from_1_to_100_pass(turnstate_settings: Any, value: Any) -> None:
    assert ids(turnstate_settings, {"CONTINUATION_ATTEMPTS": value}) == []


@pytest.mark.django_db(databases="__all__")  # Django 6 runs model checks against every database
def test_manage_py_check_reports_by_id(turnstate_settings: Any, settings: Any) -> None:
    turnstate_settings.replace({"PORT": "turnstate_app.ports.InMemoryCheckpointCommandPort"})
    with pytest.raises(SystemCheckError, match=r"turnstate\.E004"):
        call_command("check", stdout=StringIO(), stderr=StringIO())
    turnstate_settings.replace({})
    # The LangGraph saver's serializer warning has tests of its own (tests/contrib/langgraph).
    settings.SILENCED_SYSTEM_CHECKS = ["turnstate.W003"]
    out = StringIO()
    call_command("check", stdout=out)
    assert "no issues" in out.getvalue()


def test_the_docs_list_exactly_the_ids_the_code_raises() -> None:
    """The check-id table of docs/settings-and-checks.md (the README links there)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    sources = [
        root / "turnstate_app/checks.py",
        *sorted((root / "turnstate_app/contrib").glob("*/checks.py")),
    ]
    code = {found for path in sources for found in re.findall(r"turnstate\.[EW]\d{3}", path.read_text())}
    page = (root / "docs" / "settings-and-checks.md").read_text()
    table = page.split("## System checks", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `(turnstate\.[EW]\d{3})` \|", table, re.MULTILINE))
    assert code == listed


def routing_ids(settings: Any, *routers: str) -> list[str]:
    from turnstate_app.checks import check_databases

    settings.DATABASE_ROUTERS = [f"tests.routers.{name}" for name in routers]
    return [str(message.id) for message in check_databases()]


def test_routing_defaults_pass(settings: Any) -> None:
    assert routing_ids(settings) == []
    assert routing_ids(settings, "EverythingTogether") == []


@pytest.mark.parametrize("router", ["TurnstateElsewhere", "LedgerWithoutUsers"])
def test_e012_the_ledger_routed_away_from_the_user_table(settings: Any, router: str) -> None:
    assert routing_ids(settings, router) == ["turnstate.E012"]


def test_e013_the_ledger_and_the_store_written_to_different_databases(settings: Any) -> None:
    assert routing_ids(settings, "StoreApart") == ["turnstate.E013"]


@pytest.mark.django_db(databases="__all__")  # Django 6 runs model checks against every database
def test_manage_py_check_refuses_the_app_routed_away_from_its_users(settings: Any) -> None:
    settings.DATABASE_ROUTERS = ["tests.routers.TurnstateElsewhere"]
    with pytest.raises(SystemCheckError, match=r"turnstate\.E012"):
        call_command("check", stdout=StringIO(), stderr=StringIO())


@pytest.mark.parametrize(
    "value", [["tests.contrib.registered.trip"], {"": "tests.contrib.registered.trip"}, "x"]
)
def test_e015_agents_not_a_dict_of_names_to_paths(turnstate_settings: Any, value: Any) -> None:
    assert ids(turnstate_settings, {"AGENTS": value}) == ["turnstate.E016"]


@pytest.mark.parametrize("path", ["tests.no_such_module.graph", "logging.no_such_name", "graph", 3])
def test_e016_an_agents_path_that_does_not_import(turnstate_settings: Any, path: Any) -> None:
    assert ids(turnstate_settings, {"AGENTS": {"trip": path}}) == ["turnstate.E017"]


def test_e017_an_agents_entry_whose_object_has_another_name(turnstate_settings: Any) -> None:
    turnstate_settings.replace({"AGENTS": {"trip": "tests.contrib.registered.travel"}})
    (message,) = check_settings()
    assert message.id == "turnstate.E018" and "named 'travel', not 'trip'" in message.msg


def test_agents_keyed_by_their_own_names_pass(turnstate_settings: Any) -> None:
    from tests.contrib.registered import AGENTS

    assert ids(turnstate_settings, {"AGENTS": dict(AGENTS)}) == []


@pytest.mark.django_db
def test_w005_a_contrib_with_unapplied_migrations_warns_and_check_database_says_so() -> None:
    from django.core.checks import WARNING
    from django.db import connection
    from django.db.migrations.recorder import MigrationRecorder

    from turnstate_app.checks import check_contrib_migrations

    assert check_contrib_migrations(databases=["default"]) == []
    assert check_contrib_migrations() == []  # not a database check run: the database is not asked
    MigrationRecorder(connection).migration_qs.filter(app="turnstate_langgraph").delete()  # rolled back
    (message,) = check_contrib_migrations(databases=["default"])
    assert message.id == "turnstate.W005" and message.level == WARNING  # never blocks `migrate`
    assert "turnstate_langgraph.0001_initial" in message.msg and "manage.py migrate" in str(message.hint)
    out = StringIO()
    call_command("check", databases=["default"], stdout=out, stderr=out)
    assert "turnstate.W005" in out.getvalue()


def test_e019_a_key_in_standard_base64_is_not_a_fernet_key(turnstate_settings: Any) -> None:
    from tests.encryption_support import KEY_A, STANDARD_KEY

    turnstate_settings.replace({"ENCRYPTION_KEYS": [KEY_A, STANDARD_KEY]})
    (message,) = check_settings()
    assert message.id == "turnstate.E019" and "key #1" in message.msg and "key #0" not in message.msg
    assert "'+' or '/'" in message.msg and STANDARD_KEY not in message.msg + str(message.hint)


def test_e019_takes_every_key_fernet_takes(turnstate_settings: Any) -> None:
    from tests.encryption_support import KEY_A

    assert ids(turnstate_settings, {"ENCRYPTION_KEYS": [KEY_A, KEY_A.rstrip("=")]}) == []


MISSING_FRAMEWORK = """
import os, sys

class NotInstalled:  # the framework as a host without the extra has it: absent
    def find_spec(self, name, path=None, target=None):
        if name == {root!r} or name.startswith({root!r} + "."):
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
import django
from django.core.management import call_command
from django.core.management.base import SystemCheckError
django.setup()  # the integrations import their framework on first use, so this passes
try:
    call_command("check")
except SystemCheckError as refused:
    print(refused)
"""


@SQLITE_LEGS_ONLY  # a process of its own that reaches no database
@pytest.mark.parametrize(
    ("root", "contrib", "extra"),
    [
        ("pydantic_ai", "turnstate_app.contrib.pydantic_ai", "pydantic-ai"),
        ("langgraph", "turnstate_app.contrib.langgraph", "langgraph"),
        ("agents", "turnstate_app.contrib.openai_agents", "openai-agents"),
        ("google.adk", "turnstate_app.contrib.google_adk", "google-adk"),
    ],
)
def test_e026_an_integration_whose_framework_is_not_installed_is_refused_at_start_up(
    root: str, contrib: str, extra: str
) -> None:
    """Starting Django no longer imports the frameworks, so a missing one is found by the check,
    not by the first pause a worker tries to continue."""
    result = subprocess.run(
        [sys.executable, "-c", MISSING_FRAMEWORK.format(root=root)],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "turnstate.E026" in result.stdout, result.stdout
    assert f"{contrib!r} is in INSTALLED_APPS" in result.stdout
    assert f"turnstate-app[{extra}]" in result.stdout
    assert result.stdout.count("turnstate.E026") == 1, result.stdout


def test_e026_is_silent_when_every_integration_s_framework_is_installed() -> None:
    from turnstate_app.checks import check_integrations

    assert check_integrations() == []
