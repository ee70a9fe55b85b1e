"""MkDocs hook: the REST page's reference is generated from the code's schema at build time.

``rest.md`` holds ``<!-- openapi-reference -->``; the schema (``spectacular --validate
--fail-on-warn``) is generated once per build and rendered there, so the page can never describe
an endpoint, a status or an error code the code does not have.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

sys.path.insert(0, str(Path(__file__).resolve().parent))

import openapi_markdown  # noqa: E402

PLACEHOLDER = "<!-- openapi-reference -->"
_rendered: list[str] = []


def on_pre_build(config: Any) -> None:
    try:
        schema = openapi_markdown.generate_schema()
    except openapi_markdown.SchemaError as exc:
        raise PluginError(str(exc)) from exc
    _rendered[:] = [openapi_markdown.render(schema)]


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if PLACEHOLDER not in markdown:
        return markdown
    return markdown.replace(PLACEHOLDER, _rendered[0])
