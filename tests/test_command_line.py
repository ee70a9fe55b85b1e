"""The commands as a shell runs them: bad arguments are a usage error (exit 2), never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.legs import SQLITE_LEGS_ONLY

ROOT = Path(__file__).resolve().parent.parent


def manage(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "django", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


@SQLITE_LEGS_ONLY
@pytest.mark.parametrize(
    "args",
    [
        ("turnstate_redeliver", "--older-than", "-1"),
        ("turnstate_redeliver", "--older-than", "abc"),
        ("turnstate_redeliver", "--older-than=-5"),
        ("turnstate_purge", "--older-than", "-1"),
        ("turnstate_purge", "--older-than", "abc"),
        ("turnstate_purge", "--older-than", "3", "--batch-size", "0"),
        ("turnstate_purge", "--older-than", "3000000"),
        ("turnstate_redeliver", "--older-than", "99999999999"),
    ],
)
def test_a_bad_argument_is_a_usage_error(args: tuple[str, ...]) -> None:
    result = manage(*args)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert "usage:" in result.stderr and "--older-than" in result.stderr


def test_call_command_sees_the_same_refusal_as_a_command_error() -> None:
    from django.core.management import CommandError, call_command

    with pytest.raises(
        CommandError,
        match="--older-than: must not be negative: a whole number from 0 to 3153600000 seconds, not -1",
    ):
        call_command("turnstate_redeliver", "--older-than", "-1")
