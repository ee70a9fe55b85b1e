"""The site's REST page names every path, method and error ``code`` the app serves.

The page is rendered from the schema at build time (``docs/hooks/openapi_markdown.py``, the same
functions ``make docs`` runs). What it must show is taken from the code, not from the schema:
the routes from the app's router, the codes from the error handler and the serializers. So a
route or a code the schema forgets fails here too.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.legs import SQLITE_LEGS_ONLY
from turnstate_app.api import exceptions, serializers
from turnstate_app.urls import router

ROOT = Path(__file__).resolve().parent.parent
PREFIX = "/api/turnstate/"  # tests/readme_install/urls.py: the README's include()

pytestmark = SQLITE_LEGS_ONLY


def hook_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "openapi_markdown", ROOT / "docs" / "hooks" / "openapi_markdown.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def page() -> str:
    markdown = hook_module()
    schema: dict[str, Any] = markdown.generate_schema()
    rendered: str = markdown.render(schema)
    return rendered


def routes() -> list[tuple[str, str]]:
    """``(METHOD, path)`` of each route of the router; ``(?P<pk>...)`` is ``{id}``, as in the schema."""
    found = []
    for pattern in router.urls:
        regex = pattern.pattern.regex.pattern.removeprefix("^").removesuffix("$")
        path = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: "{" + ("id" if m[1] == "pk" else m[1]) + "}", regex)
        actions: dict[str, str] = getattr(pattern.callback, "actions", {})
        # HEAD is GET's twin (DRF adds it to a route's actions at its first request); the schema omits it.
        for method in sorted(set(actions) - {"head"}):
            found.append((method.upper(), PREFIX + path))
    return found


def error_codes() -> set[str]:
    """Every ``code`` an error body can carry: the lifecycle's, the handler's own, and DRF's."""
    handler_source = Path(exceptions.__file__).read_text()
    own = set(re.findall(r'error_body\(\s*"(\w+)"', handler_source))
    lifecycle = {code for _error, _status, code, _detail in exceptions.LIFECYCLE_ERRORS}
    return own | lifecycle | set(serializers.ERROR_CODES)


def test_the_router_and_the_handler_give_something_to_check() -> None:
    assert len(routes()) == 6
    assert {"invalid_token", "already_answered", "expired", "unavailable", "server_error"} <= error_codes()


@pytest.mark.parametrize(("method", "path"), routes())
def test_every_route_has_its_section_on_the_page(page: str, method: str, path: str) -> None:
    assert f"### `{method} {path}`" in page


@pytest.mark.parametrize("code", sorted(error_codes()))
def test_every_error_code_is_on_the_page(page: str, code: str) -> None:
    assert f"`{code}`" in page


def test_every_status_the_schema_documents_is_a_row_on_the_page(page: str) -> None:
    for status in (200, 400, 401, 403, 404, 409, 410, 413, 415, 503):
        assert re.search(rf"^\| {status} \|", page, re.MULTILINE), status


def test_the_rest_page_embeds_the_reference_and_holds_the_guide() -> None:
    source = (ROOT / "docs" / "rest.md").read_text()
    assert "<!-- openapi-reference -->" in source
    assert "| `POST pauses/resume/` |" in source and "| 409 | `already_answered` |" in source
