"""Every command prints its help: ``manage.py NAME --help`` and ``manage.py help NAME``.

The commands are found the way ``manage.py`` finds them (each installed app's
``management/commands``), so a new command is covered without touching this file. A lazily
translated help text once reached argparse, which ``re.sub``s it: ``--help`` crashed with
``TypeError: expected string or bytes-like object, got '__proxy__'``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import ManagementUtility, find_commands, get_commands

from tests.demo_runs import this_tree
from tests.legs import SQLITE_LEGS_ONLY

ROOT = Path(__file__).resolve().parent.parent
MANAGE = ROOT / "example_project" / "manage.py"
EXAMPLE_COMMANDS = ROOT / "example_project" / "demo_agents" / "management"

ALL_COMMANDS = sorted(get_commands())
OURS = sorted(name for name, app in get_commands().items() if app.startswith("turnstate_app"))


def test_the_app_and_its_contribs_have_commands_to_cover() -> None:
    core = {"turnstate_purge", "turnstate_redeliver", "turnstate_unresumable", "turnstate_expire"}
    assert core | {"turnstate_langgraph_orphans"} <= set(OURS)


@pytest.mark.parametrize("name", ALL_COMMANDS)
def test_dash_dash_help_prints_the_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as leaving:
        ManagementUtility(["manage.py", name, "--help"]).execute()
    printed = capsys.readouterr()
    assert leaving.value.code == 0, printed.err
    assert f"usage: manage.py {name}" in printed.out


@pytest.mark.parametrize("name", ALL_COMMANDS)
def test_help_name_prints_the_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    ManagementUtility(["manage.py", "help", name]).execute()
    assert f"usage: manage.py {name}" in capsys.readouterr().out


def test_the_help_is_the_command_s_own_text(capsys: pytest.CaptureFixture[str]) -> None:
    ManagementUtility(["manage.py", "help", "turnstate_unresumable"]).execute()
    assert "List pending pauses whose request is recorded" in capsys.readouterr().out


@SQLITE_LEGS_ONLY
@pytest.mark.parametrize("name", OURS + sorted(find_commands(str(EXAMPLE_COMMANDS))))
def test_the_example_project_s_manage_py_prints_the_help(name: str) -> None:
    env = this_tree({key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"})
    result = subprocess.run(
        [sys.executable, str(MANAGE), name, "--help"], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert f"usage: manage.py {name}" in result.stdout


def help_of(name: str, capsys: pytest.CaptureFixture[str]) -> str:
    """The help as one line of words: argparse wraps it to the terminal's width."""
    ManagementUtility(["manage.py", "help", name]).execute()
    return " ".join(capsys.readouterr().out.split())


def test_each_threshold_s_help_reads_as_a_sentence(capsys: pytest.CaptureFixture[str]) -> None:
    text = help_of("turnstate_status", capsys)
    for sentence in (
        "--max-pending N Exit with status 1 when more than N pauses are pending.",
        "--max-pending-age S Exit with status 1 when the oldest pending pause has waited more than S "
        "seconds.",
        "--max-stalled N Exit with status 1 when more than N continuations are stalled: claimed longer "
        "than STALLED_AFTER ago and unfinished.",
        "--max-awaiting-handoff N Exit with status 1 when more than N answers wait for a hand-off to "
        "RESUME_HANDLER that has not succeeded.",
        "--count-limit N Where each count stops",
        "--database ALIAS The database alias to read",
    ):
        assert sentence in text, sentence
    assert '"breached"' in text and '"passed"' in text  # the JSON key, and its earlier name


def test_every_option_that_takes_a_value_names_it_in_capitals(capsys: pytest.CaptureFixture[str]) -> None:
    """argparse makes a metavar from the destination (``--count-limit COUNT_LIMIT``) when none is given."""
    for name in OURS:
        text = help_of(name, capsys)
        assert "COUNT_LIMIT" not in text and " LIMIT " not in text and " AFTER " not in text, name
        assert " DATABASE " not in text and " THREAD " not in text and " JTI " not in text, name
