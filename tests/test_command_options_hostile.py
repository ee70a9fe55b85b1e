"""Every option of every command under hostile values: a refusal naming the option, never a traceback.

The options are found the way ``manage.py`` finds the commands (each installed app's
``management/commands``) and read from each command's own ``add_arguments``, so a new command or
option is covered without touching this file. Values that reach the database unchecked fail there
in the driver (``bigint out of range``, ``datatype mismatch``, a NUL in text, an unencodable
surrogate), and values that reach date arithmetic overflow; either was a traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from base64 import b64encode
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path
from typing import Any, cast

import pytest
from django.core.management import CommandError, call_command, get_commands, load_command_class
from django.core.management.base import CommandParser
from django.test import Client
from django.urls import reverse

from tests.api_support import UNRESUMABLE, client_for
from tests.factories import UserFactory
from tests.pause_helpers import legacy_request, lost

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent
OURS = sorted(name for name, app in get_commands().items() if app.startswith("turnstate_app"))


@dataclass
class Recorder:
    """Stands in for the parser: records each option a command adds, and its required groups."""

    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    required_groups: list[list[str]] = field(default_factory=list)

    def add_argument(self, *flags: str, **kwargs: Any) -> None:
        self.options[flags[0]] = kwargs

    def add_mutually_exclusive_group(self, *, required: bool = False) -> Recorder:
        group = Recorder(options=self.options)
        if required:
            self.required_groups.append([])
            group.required_groups = self.required_groups
            group.add_argument = self.group_member  # type: ignore[method-assign]
        return group

    def group_member(self, *flags: str, **kwargs: Any) -> None:
        self.options[flags[0]] = kwargs
        self.required_groups[-1].append(flags[0])


def options_of(name: str) -> Recorder:
    command = load_command_class(get_commands()[name], name)
    recorder = Recorder()
    command.add_arguments(cast(CommandParser, recorder))
    return recorder


FLAGS = ("store_true", "store_false", "store_const", "count", "help", "version")


def value_options(name: str) -> dict[str, dict[str, Any]]:
    """The options that take a value (not flags)."""
    return {flag: kw for flag, kw in options_of(name).options.items() if kw.get("action") not in FLAGS}


def is_number(option: dict[str, Any]) -> bool:
    try:
        return isinstance(option["type"]("1"), int)
    except Exception:  # noqa: BLE001 - a text validator may refuse "1" (a database alias)
        return False


BENIGN = {"--thread": "no-such-thread", "--older-than": "30"}
"""A harmless value for an option another one needs beside it (a required group)."""


def companions(name: str, flag: str) -> list[str]:
    """Whatever the command requires besides ``flag``, harmless, so only ``flag`` can be refused."""
    needed = []
    for group in options_of(name).required_groups:
        if flag not in group:
            member = next(member for member in group if member in BENIGN)
            needed.append(f"{member}={BENIGN[member]}")
    return needed


CASES = [(name, flag) for name in OURS for flag in value_options(name)]
HOSTILE = {
    "bigint max": str(2**63 - 1),
    "past bigint": str(2**63),
    "1e20 written out": str(10**20),
    "1e20": "1e20",
    "below bigint": str(-(2**63) - 1),
    "negative": "-1",
    "not a number": "abc",
    "empty": "",
    "too many digits": "9" * 5000,
    "NUL": "\x00",
    "NUL inside": "a\x00b",
    "lone surrogate": "\udcff",
    "a cursor before year 1 in UTC": "0001-01-01T00:00:00+01:00~5",
    "a cursor past year 9999 in UTC": "9999-12-31T23:59:59-01:00~5",
    "a cursor past bigint": "2026-01-01T00:00:00+00:00~" + str(2**63),
}


def test_there_are_options_to_cover() -> None:
    assert {"turnstate_purge", "turnstate_status", "turnstate_unresumable"} <= set(OURS)
    assert ("turnstate_purge", "--thread") in CASES and ("turnstate_status", "--database") in CASES
    assert ("turnstate_status", "--max-stalled") in CASES and ("turnstate_unresumable", "--after") in CASES


@pytest.mark.parametrize(("name", "flag"), CASES)
def test_every_option_that_takes_a_value_is_checked_by_a_validator(name: str, flag: str) -> None:
    """The validators know every range a value must be in for the database and for date arithmetic."""
    validator = value_options(name)[flag].get("type")
    assert validator is not None, f"{name} {flag} takes any text unchecked"
    assert validator.__module__ == "turnstate_app.management.options", f"{name} {flag}"
    assert value_options(name)[flag].get("metavar"), f"{name} {flag} shows argparse's made-up metavar"


@pytest.mark.parametrize(("name", "flag"), CASES)
@pytest.mark.parametrize("value", list(HOSTILE.values()), ids=list(HOSTILE))
def test_a_hostile_value_is_refused_naming_its_option_or_taken(name: str, flag: str, value: str) -> None:
    legacy_request(1)
    option = value_options(name)[flag]
    refused = is_number(option) or "\x00" in value or "\udcff" in value
    try:
        call_command(name, f"{flag}={value}", *companions(name, flag), stdout=StringIO(), stderr=StringIO())
    except CommandError as error:
        if refused:
            assert flag in str(error), str(error)
    else:
        assert not refused, f"{name} {flag}={value!r} was taken"


@pytest.mark.parametrize(("name", "flag"), CASES)
def test_a_hostile_keyword_argument_from_python_is_refused_naming_its_option(name: str, flag: str) -> None:
    """``call_command(name, older_than=...)`` passes keywords around argparse; they are checked too."""
    legacy_request(1)
    option = value_options(name)[flag]
    value: object = 10**20 if is_number(option) else "bad\x00value"
    keywords = {option.get("dest") or flag.lstrip("-").replace("-", "_"): value}
    with pytest.raises(CommandError) as refused:
        call_command(name, *companions(name, flag), **keywords, stdout=StringIO(), stderr=StringIO())
    assert flag in str(refused.value), str(refused.value)


def manage(*args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "django", *args], cwd=ROOT, env=env, capture_output=True, timeout=120
    )


def first_text_option(name: str) -> str:
    """The option most at risk from argv that is not UTF-8: one taking text, else any, else a flag."""
    options = value_options(name)
    texts = [flag for flag, option in options.items() if not is_number(option)]
    return (texts or list(options) or list(options_of(name).options))[0]


@pytest.mark.parametrize("name", OURS)
def test_argv_that_is_not_utf8_is_a_usage_error_in_a_real_process(name: str) -> None:
    """``b"--thread=\\xff"``: Python decodes it to a lone surrogate, which no driver can encode."""
    flag = first_text_option(name)
    result = manage(name, flag.encode() + b"=\xff", *companions(name, flag))
    assert b"Traceback" not in result.stderr, result.stderr.decode(errors="replace")
    assert result.returncode == 2, result.stderr.decode(errors="replace")
    assert b"usage:" in result.stderr and flag.encode() in result.stderr


# -- cursors that cannot be converted to UTC, on every face that takes one -----------------------

OUT_OF_RANGE_CURSORS = [
    "0001-01-01T00:00:00+01:00~5",
    "9999-12-31T23:59:59-01:00~5",
]


@pytest.mark.parametrize("cursor", OUT_OF_RANGE_CURSORS)
def test_an_unconvertible_cursor_is_a_command_error(cursor: str) -> None:
    lost(1)
    with pytest.raises(CommandError, match="--after"):
        call_command("turnstate_unresumable", "--after", cursor, stdout=StringIO())


@pytest.mark.parametrize("cursor", OUT_OF_RANGE_CURSORS)
def test_an_unconvertible_cursor_is_an_admin_message(admin_client: Client, cursor: str) -> None:
    lost(1)
    legacy_request(2)
    url = reverse("admin:turnstate_app_unresumablepause_changelist")
    response = admin_client.get(url, {"after": cursor})
    assert response.status_code == 302 and response["Location"].endswith("?e=1")
    shown = admin_client.get(response["Location"])
    assert shown.status_code == 200
    assert [str(message) for message in shown.context["messages"]] == [
        "This page's cursor is not one of this list's: showing the first page."
    ]


@pytest.mark.parametrize("position", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_an_unconvertible_cursor_is_a_json_400_over_rest(position: str) -> None:
    lost(1)
    cursor = b64encode(f"p={position}".encode()).decode()
    response = client_for(UserFactory.create(is_staff=True)).get(UNRESUMABLE, {"cursor": cursor})
    assert response.status_code == 400 and response.json()["cursor"] == ["Invalid cursor."]
