"""The sdist holds everything the suite needs: built fresh, unpacked, and collected in place."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.legs import SQLITE_LEGS_ONLY

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.packaging,
    SQLITE_LEGS_ONLY,
]


def collected(cwd: Path) -> list[str]:
    """The test ids ``pytest --collect-only`` finds under ``cwd``, importing the code found there."""
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "", "-p", "no:cacheprovider"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return sorted(line for line in result.stdout.splitlines() if "::" in line)


def test_the_sdist_collects_every_test_module_of_the_checkout(tmp_path: Path) -> None:
    build = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(tmp_path / "dist")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    (sdist,) = (tmp_path / "dist").glob("turnstate_app-*.tar.gz")
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path / "unpacked", filter="data")
    (unpacked,) = (tmp_path / "unpacked").iterdir()

    in_sdist = collected(unpacked)

    modules = {test_id.split("::", 1)[0] for test_id in in_sdist}
    assert modules == {path.relative_to(ROOT).as_posix() for path in (ROOT / "tests").rglob("test_*.py")}
    assert len(in_sdist) > 500
    needed_files = (
        "README.md",
        "LICENSE",
        "CHANGELOG.md",
        "Makefile",
        "tests/conftest.py",
        "tests/records/turn_state_v1.json",
        "example_project/demo.py",
    )
    for needed in needed_files:
        assert (unpacked / needed).is_file(), needed
