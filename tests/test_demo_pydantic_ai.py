"""`make demo-pydantic-ai` checks what it shows; here it runs end to end, as CI runs it, on SQLite."""

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


def test_the_pydantic_ai_demo_runs_end_to_end(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "example_project" / "demo_pydantic_ai.py"),
            "--database-url",
            f"sqlite:///{tmp_path / 'demo.sqlite3'}",
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env={key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "stopped for two deferred tool calls" in out
    assert "alice answered the question over HTTP: 200" in out
    assert "The run stays paused" in out
    assert "A malformed approval is refused before the token is spent: 400" in out
    assert "A staff user approved the booking over HTTP: 200" in out
    assert "[assistant] Booked: 2 seats to Lisbon, flying Monday." in out
    assert "ran=False (already continued); bookings made: 1." in out
