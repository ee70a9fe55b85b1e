"""`make demo-langgraph` checks what it shows; here it runs end to end, as CI runs it, on SQLite."""

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


def test_the_langgraph_demo_runs_end_to_end(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "example_project" / "demo_langgraph.py"),
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
    assert "stopped at two parallel interrupts" in out
    assert "refused before the token is spent:\n   400 " in out
    assert "was not asked again (2 pauses in all, 1 interrupt waiting)" in out
    assert "still owned by alice: 'Window or aisle?'" in out
    assert "seat=window meal=vegetarian" in out and "no fork" in out
    assert "ran=False reason='already continued'; node runs and checkpoints unchanged" in out
    assert "no orphaned interrupts or pauses" in out
