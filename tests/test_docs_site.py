"""The documentation site's sources hold together without building it (``make docs`` builds it).

The guides hold their own text; the home page and getting started include the README's intro,
install and quickstarts by name, so every name a page uses must be marked in the README, once,
start before end. A snippet marker inside prose is swallowed by the include
(pymdownx.snippets drops any line holding one), so no included file may carry one mid-text.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text()
PAGES = sorted(DOCS.glob("**/*.md"))
INCLUDED_WHOLE = ("CHANGELOG.md", "SECURITY.md", "CONTRIBUTING.md")
DIRECTIVE = re.compile(r'^--8<-- "README\.md:(?P<name>[a-z][-_0-9a-z]*)"$', re.MULTILINE)
MARKER = re.compile(r"^<!-- --8<-- \[(start|end):([a-z][-_0-9a-z]*)\] -->$")


def names_used() -> set[str]:
    return {match["name"] for page in PAGES for match in DIRECTIVE.finditer(page.read_text())}


def test_the_guides_include_readme_sections() -> None:
    assert {
        "intro",
        "install",
        "quickstart-plain",
        "quickstart-langgraph",
        "quickstart-pydantic-ai",
    } <= names_used()


@pytest.mark.parametrize("name", sorted(names_used()))
def test_every_section_a_page_names_is_marked_once_in_the_readme(name: str) -> None:
    lines = README.splitlines()
    starts = [i for i, line in enumerate(lines) if line == f"<!-- --8<-- [start:{name}] -->"]
    ends = [i for i, line in enumerate(lines) if line == f"<!-- --8<-- [end:{name}] -->"]
    assert len(starts) == 1 and len(ends) == 1 and starts[0] < ends[0], name


@pytest.mark.parametrize(
    "path",
    [*PAGES, *(ROOT / name for name in INCLUDED_WHOLE), ROOT / "README.md"],
    ids=lambda path: path.relative_to(ROOT).as_posix(),
)
def test_no_snippet_marker_hides_in_prose(path: Path) -> None:
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if "--8<--" in line:
            assert (
                DIRECTIVE.match(line) or MARKER.match(line) or re.match(r'^--8<-- "[\w.]+(:[a-z-]+)?"$', line)
            ), f"{path.name}:{number}: {line}"


def test_every_page_in_the_navigation_exists() -> None:
    config = (ROOT / "mkdocs.yml").read_text()
    for page in re.findall(r"^\s+- (?:[^:\n]+: )?([\w/-]+\.md)$", config, re.MULTILINE):
        assert (DOCS / page).is_file(), page


def test_the_site_screenshots_are_checked_in() -> None:
    for name in (
        "site-index-1440.png",
        "site-reference-pauses-1440.png",
        "site-getting-started-1440.png",
        "admin-unresumable-1440.png",
        "admin-pauses-1440.png",
    ):
        assert (DOCS / "img" / name).stat().st_size > 10_000, name


def test_the_operators_page_names_every_command_span_and_metric() -> None:
    from turnstate_app import telemetry

    page = (DOCS / "admin-and-commands.md").read_text()
    commands = sorted((ROOT / "turnstate_app" / "management" / "commands").glob("turnstate_*.py"))
    assert commands
    for command in commands:
        assert f"manage.py {command.stem}" in page, command.stem
    for name in telemetry.METRICS:
        assert f"| `{name}` |" in page, name
    sources = "\n".join(path.read_text() for path in (ROOT / "turnstate_app").glob("**/*.py"))
    spans = set(re.findall(r'telemetry\.span\(\s*"([\w.]+)"', sources))
    assert spans
    for span in spans:
        assert f"| `{span}` |" in page, span
    assert "GET status/" in page and "--jsonl" in page and "Next page" in page
