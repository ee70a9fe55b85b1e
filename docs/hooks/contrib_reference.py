"""MkDocs hook: every integration under ``turnstate_app.contrib`` gets an API reference page.

A package that has a hand-written page (``docs/reference/contrib-langgraph.md``) keeps it; any
other package gets a generated one, added to the "API reference" section of the navigation. So
an integration that lands later is documented from its docstrings without touching the site,
and one that does not exist yet has no page that would fail the strict build.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[2]
CONTRIB = ROOT / "turnstate_app" / "contrib"
SECTION = "API reference"

_generated: dict[str, str] = {}


def integrations() -> list[str]:
    return sorted(path.parent.name for path in CONTRIB.glob("*/__init__.py"))


def page_uri(package: str) -> str:
    return f"reference/contrib-{package.replace('_', '-')}.md"


def on_config(config: Any) -> Any:
    _generated.clear()
    section: list[Any] = next(
        item[SECTION] for item in config["nav"] if isinstance(item, dict) and SECTION in item
    )
    listed = {
        value for entry in section for value in (entry.values() if isinstance(entry, dict) else [entry])
    }
    docs = Path(config["docs_dir"])
    for package in integrations():
        uri = page_uri(package)
        module = f"turnstate_app.contrib.{package}"
        if uri not in listed:
            section.append({module: uri})
        if not (docs / uri).is_file():
            _generated[uri] = f"# `{module}`\n\n::: {module}\n    options:\n      show_root_heading: false\n"
    return config


def on_files(files: Any, config: Any) -> Any:
    for uri, content in _generated.items():
        files.append(File.generated(config, uri, content=content))
    return files
