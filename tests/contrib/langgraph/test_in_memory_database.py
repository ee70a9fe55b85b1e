"""A host's tests on Django's default in-memory SQLite test database run the bridge without
``database table is locked`` (``tests/in_memory_bridge.py``, in a process of its own: the
suite's own database is a file, so spawned processes can share it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_bridge_runs_in_a_hosts_tests_on_the_in_memory_test_database() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings_memory", "DATABASE_URL": ""}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/in_memory_bridge.py"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert "table is locked" not in done.stdout, done.stdout[-4000:]
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "failed" not in done.stdout
