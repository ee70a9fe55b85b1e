"""`make demo` checks what it shows; here it runs end to end, as CI runs it, on SQLite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(
    not (os.environ.get("DATABASE_URL") or "sqlite").startswith("sqlite"),
    reason="the demo runs once per leg, on its own SQLite file; the database legs test the app",
)


def test_the_demo_runs_end_to_end(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "example_project" / "demo.py"),
            "--database-url",
            f"sqlite:///{tmp_path / 'demo.sqlite3'}",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env={key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "resumable=True" in out and "resumable=False" in out
    assert "answered" in out and "409" in out and "already_answered" in out
    assert "rebuilt the turn from the database alone" in out
    assert "Booked: the offsite is the week of May 11" in out


def test_the_demo_fails_loudly_when_the_database_is_down(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "example_project" / "demo.py"),
            "--database-url",
            "postgres://postgres@127.0.0.1:1/nowhere",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"},
    )
    assert result.returncode == 1
    assert "DEMO FAILED: step 'prepare the database' failed" in result.stdout
