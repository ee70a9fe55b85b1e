"""The README's and the docs' snippets import what they use; the guarantees name real tests.

The quickstarts themselves run in a fresh project (tests/test_quickstarts.py); the guarantees
table lives on the docs site (docs/guarantees.md).
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.legs import SQLITE_LEGS_ONLY

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
DOCS = "\n".join(page.read_text() for page in sorted((ROOT / "docs").glob("**/*.md")))
GUARANTEES = (ROOT / "docs" / "guarantees.md").read_text()
NAMED_TESTS = sorted(set(re.findall(r"`(tests/(?:contrib/\w+/)?test_\w+\.py::test_\w+)`", GUARANTEES)))
IMPORT = re.compile(r"^\s*from (turnstate_app[\w.]*) import ([\w, ]+)$", re.MULTILINE)
IMPORTS = sorted(set(IMPORT.findall(README)) | set(IMPORT.findall(DOCS)))


def test_the_worker_and_celery_snippets_names_are_the_lifecycles() -> None:
    from turnstate_app.pauses import rebuild_resumed
    from turnstate_app.pauses.handoff import rebuild_resumed as defined

    assert rebuild_resumed is defined


def test_the_readme_imports_what_its_snippets_call() -> None:
    names = {name.strip() for _module, names in IMPORT.findall(README) for name in names.split(",")}
    assert {"resumed", "mint_pause", "continue_once", "pause_interrupts", "pause_deferred"} <= names


@pytest.mark.parametrize(("module", "names"), IMPORTS)
def test_every_import_in_the_readme_works(module: str, names: str) -> None:
    imported = importlib.import_module(module)
    for name in names.split(","):
        assert hasattr(imported, name.strip()), f"{module}.{name.strip()}"


def test_the_guarantees_name_tests() -> None:
    assert len(NAMED_TESTS) >= 40
    assert any(name.startswith("tests/contrib/") for name in NAMED_TESTS)


@SQLITE_LEGS_ONLY
def test_every_test_the_guarantees_name_exists_and_is_collected() -> None:
    """``pytest --collect-only`` of exactly those ids: one that does not exist fails the collection."""
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-m",
            "",
            "-p",
            "no:cacheprovider",
            *NAMED_TESTS,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    collected = {line.split("[", 1)[0] for line in result.stdout.splitlines() if "::" in line}
    assert collected == set(NAMED_TESTS)
