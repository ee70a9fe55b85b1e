"""Runs an example_project demo script end to end, as `make demo*` and CI run it.

The demo tests share this so each keeps only what its demo must show. A demo starts its own
server and worker on its own SQLite file, so the tests run once, on SQLite (`make test-demos`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

only_on_sqlite = [
    # `make test-demos` runs them (CI too), not `make test`: each starts its own server and worker
    # processes, and together they are half of a SQLite leg's time.
    pytest.mark.demo,
    pytest.mark.skipif(
        not (os.environ.get("DATABASE_URL") or "sqlite").startswith("sqlite"),
        reason="the demo runs once per leg, on its own SQLite file; the database legs test the app",
    ),
]


def run_demo(script: str, database_url: str, *, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run ``example_project/<script>`` in a fresh interpreter and return what it printed."""
    return subprocess.run(
        [sys.executable, str(ROOT / "example_project" / script), "--database-url", database_url],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=this_tree({key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}),
    )


def this_tree(env: dict[str, str]) -> dict[str, str]:
    """``env`` with this checkout first on the path: the demo runs this tree's app, not an installed one."""
    return {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))}
