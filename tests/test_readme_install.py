"""A host set up with only the README's install section passes ``check --deploy`` and serves a schema."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def manage(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.readme_install.settings", "PYTHONPATH": str(ROOT)}
    env.pop("DATABASE_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "django", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_passes_on_a_readme_literal_install() -> None:
    result = manage("check", "--deploy", "--fail-level", "ERROR")
    assert result.returncode == 0, result.stderr
    assert "drf_spectacular" not in result.stderr + result.stdout


def test_the_schema_generates_without_the_hosts_schema_setting() -> None:
    result = manage("spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json")
    assert result.returncode == 0, result.stderr
    assert '"turnstate_pauses_list"' in result.stdout
