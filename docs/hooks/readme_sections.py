"""MkDocs hook: pages include the README's sections (intro, install, quickstarts) instead of copying them.

A page names a section with pymdownx.snippets' own syntax, ``--8<-- "README.md:install"``, and
the README marks it with ``<!-- --8<-- [start:install] -->`` ... ``<!-- --8<-- [end:install] -->``
(HTML comments: invisible on the repository's front page). This hook expands those lines itself,
before Markdown runs, because a README section's links are written for the repository's root
(``docs/img/...``, ``#settings``) and must be rewritten for the page that shows them; a section
that is named but not marked fails the build.

A section that another change has yet to add is written as a block with a fallback::

    <!-- readme-section: pydantic-ai (optional, or the section headed "PydanticAI") -->
    What the page says until the README has the section.
    <!-- /readme-section -->

When the README marks ``pydantic-ai``, the block is replaced by that section; when it has no such
marker but a ``## `` heading that starts with the quoted text, by the text under that heading (up
to the next ``## ``), so a section written before its markers still shows; otherwise the fallback
shows, and the strict build stays green (pymdownx.snippets with ``check_paths`` would stop the
whole build on a missing section).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from markdown.extensions.toc import slugify
from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

REQUIRED = re.compile(r'^[ \t]*--8<--[ \t]+"README\.md:(?P<name>[a-z][-_0-9a-z]*)"[ \t]*$', re.MULTILINE)
OPTIONAL = re.compile(
    r"^<!-- readme-section: (?P<name>[a-z][-_0-9a-z]*) "
    r'\(optional(?:, or the section headed "(?P<heading>[^"]+)")?\) -->\n'
    r"(?P<fallback>.*?)^<!-- /readme-section -->$",
    re.MULTILINE | re.DOTALL,
)
MARKER = re.compile(r"^<!-- --8<-- \[(?P<kind>start|end):(?P<name>[a-z][-_0-9a-z]*)\] -->$")
HEADING = re.compile(r"^(#{1,6}) (.+)$")
# Files of the repository's root that the site carries as pages of its own.
ROOT_FILES_AS_PAGES = {
    "CHANGELOG.md": "changelog.md",
    "SECURITY.md": "security.md",
    "CONTRIBUTING.md": "contributing.md",
}

_sections: dict[str, list[str]] = {}
_anchor_pages: dict[str, str] = {}
_headed: dict[str, tuple[str, list[str]]] = {}


def readme_sections(text: str) -> dict[str, list[str]]:
    """Every marked section of ``text``, by name, without the markers of sections nested in it."""
    sections: dict[str, list[str]] = {}
    open_names: list[str] = []
    for line in text.splitlines():
        marker = MARKER.match(line.strip())
        if marker:
            name = marker["name"]
            if marker["kind"] == "start":
                sections.setdefault(name, [])
                open_names.append(name)
            elif name in open_names:
                open_names.remove(name)
            continue
        for name in open_names:
            sections[name].append(line)
    return sections


def headed_section(text: str, start: str) -> tuple[str, list[str]] | None:
    """The heading and lines under the first ``## `` heading that starts with ``start``, markers dropped."""
    lines = text.splitlines()
    in_code = False
    for index, line in enumerate(lines):
        in_code = in_code != line.startswith("```")
        if not in_code and line.startswith("## ") and line[3:].startswith(start):
            body: list[str] = []
            fence = False
            for following in lines[index + 1 :]:
                fence = fence != following.startswith("```")
                if not fence and following.startswith("## "):
                    break
                if not MARKER.match(following.strip()):
                    body.append(following)
            return line[3:], body
    return None


def github_slug(heading: str) -> str:
    """The anchor the repository's page gives a heading (lowercase, punctuation dropped)."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def on_pre_build(config: Any) -> None:
    _sections.clear()
    _sections.update(readme_sections(README.read_text(encoding="utf-8")))
    _headed.clear()


def on_files(files: Any, config: Any) -> Any:
    """Learn which page shows which README section, so ``#anchor`` links can follow the section."""
    _anchor_pages.clear()
    section_pages: dict[str, str] = {}
    for file in files.documentation_pages():
        source = Path(file.abs_src_path).read_text(encoding="utf-8") if file.abs_src_path else ""
        for match in REQUIRED.finditer(source):
            section_pages.setdefault(match["name"], file.src_uri)
        for match in OPTIONAL.finditer(source):
            section_pages.setdefault(match["name"], file.src_uri)
            found = match["heading"] and headed_section(README.read_text(encoding="utf-8"), match["heading"])
            if found and match["name"] not in _sections:
                _headed[match["name"]] = found
                _anchor_pages.setdefault(github_slug(found[0]), file.src_uri)
    current: str | None = None
    for line in README.read_text(encoding="utf-8").splitlines():
        marker = MARKER.match(line.strip())
        if marker and marker["kind"] == "start" and current is None:
            current = marker["name"]
        elif marker and marker["kind"] == "end" and marker["name"] == current:
            current = None
        heading = HEADING.match(line)
        if heading and current in section_pages:
            page = section_pages[current]  # type: ignore[index]
            _anchor_pages[github_slug(heading[2])] = f"{page}#{slugify(heading[2], '-')}"
    # A top-level heading sits just above its own start marker: it points at its section's page.
    lines = README.read_text(encoding="utf-8").splitlines()
    for index, line in enumerate(lines[:-1]):
        heading, marker = HEADING.match(line), MARKER.match(lines[index + 1].strip())
        if heading and marker and marker["kind"] == "start" and marker["name"] in section_pages:
            _anchor_pages[github_slug(heading[2])] = section_pages[marker["name"]]
    return files


def for_page(lines: list[str], page_uri: str) -> str:
    """A README section's text with its links made right for the page at ``page_uri``."""
    depth = page_uri.count("/")
    up = "../" * depth
    text = "\n".join(lines)
    text = re.sub(r"\]\(docs/", f"]({up}", text)
    for root_file, page in ROOT_FILES_AS_PAGES.items():
        text = text.replace(f"]({root_file}", f"]({up}{page}")

    def anchor(match: re.Match[str]) -> str:
        target = _anchor_pages.get(match["slug"])
        if target is None:
            return match[0]
        page, _, fragment = target.partition("#")
        if page == page_uri and fragment:
            return f"](#{fragment})"
        return f"]({up}{target})"

    return re.sub(r"\]\(#(?P<slug>[^)\s]+)\)", anchor, text)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    uri = page.file.src_uri

    def required(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in _sections:
            raise PluginError(
                f"{uri}: README.md has no section marked '{name}' (<!-- --8<-- [start:{name}] -->)"
            )
        return for_page(_sections[name], uri)

    def optional(match: re.Match[str]) -> str:
        name = match["name"]
        if name in _sections:
            return for_page(_sections[name], uri)
        if name in _headed:
            heading, body = _headed[name]
            return for_page([f"## {heading}", *body], uri)
        return str(match["fallback"])

    return REQUIRED.sub(required, OPTIONAL.sub(optional, markdown))
