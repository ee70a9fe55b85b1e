"""The README's snippets import what they use from where the README says."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()
IMPORTS = sorted(set(re.findall(r"^\s*from (turnstate_app[\w.]*) import ([\w, ]+)$", README, re.MULTILINE)))


def test_the_worker_and_celery_snippets_names_are_the_lifecycles() -> None:
    from turnstate_app.pauses import rebuild_resumed
    from turnstate_app.pauses.handoff import rebuild_resumed as defined

    assert rebuild_resumed is defined


def test_the_readme_imports_what_its_snippets_call() -> None:
    names = {name.strip() for _module, names in IMPORTS for name in names.split(",")}
    assert {"rebuild_resumed", "mint_pause", "get_default_store", "Pause"} <= names


@pytest.mark.parametrize(("module", "names"), IMPORTS)
def test_every_import_in_the_readme_works(module: str, names: str) -> None:
    imported = importlib.import_module(module)
    for name in names.split(","):
        assert hasattr(imported, name.strip()), f"{module}.{name.strip()}"
