"""No other package's private names in the app, the benchmarks or the example project.

Ruff's ``SLF001`` sees ``obj._name`` only. A private name is just as private when it is
read as ``getattr(obj, "_name")`` or imported (``from pkg import _name``,
``from pkg._mod import name``, ``import pkg._mod``), and it breaks the same way when the
other package changes it. This scan sees those forms too. The app's own private modules
and names (``turnstate_app.contrib._lazy``) are its own to use, and so is an attribute a
module sets itself (a benchmark marking an object it holds); the names Django documents
despite the underscore are those ruff is told to ignore in ``pyproject.toml``.
"""

from __future__ import annotations

import ast
import textwrap
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import django
import pytest
from django.core import mail
from django.core.signals import got_request_exception
from django.db import OperationalError
from django.http import HttpRequest
from rest_framework.authentication import SessionAuthentication
from rest_framework.test import APIClient, APIRequestFactory

from tests.api_support import RESUME
from tests.factories import UserFactory
from turnstate_app.api.exceptions import KeepsDjangoRequest, turnstate_exception_handler

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("turnstate_app", "bench", "example_project")
OWN_PACKAGE = "turnstate_app"
ATTRIBUTE_BUILTINS = frozenset({"getattr", "hasattr", "setattr", "delattr"})
SELF_NAMES = frozenset({"self", "cls", "mcs"})


def documented_names() -> frozenset[str]:
    """The underscored names ruff's SLF001 is told to allow (Django documents ``_meta``)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return frozenset(config["tool"]["ruff"]["lint"]["flake8-self"]["extend-ignore-names"])


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_part(dotted: str) -> str | None:
    """The first private segment of a dotted module path, if any."""
    return next((part for part in dotted.split(".") if is_private(part)), None)


def is_own(module: str) -> bool:
    return module == OWN_PACKAGE or module.startswith(f"{OWN_PACKAGE}.")


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def findings_in(
    source: str, path: str, *, module: str = "", allowed: frozenset[str] = frozenset()
) -> Iterator[Finding]:
    """Every use of another package's private name in ``source`` (``module`` resolves relative imports)."""
    tree = ast.parse(source, filename=path)
    allowed = allowed | set_here(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield from _attribute_call(node, path, allowed)
        elif isinstance(node, ast.ImportFrom):
            yield from _import_from(node, path, module)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if not is_own(alias.name) and private_part(alias.name):
                    yield Finding(path, node.lineno, f"import {alias.name}")


def set_here(tree: ast.AST) -> frozenset[str]:
    """The private attributes the module itself assigns (``obj._mark = ...``): its own names."""
    return frozenset(
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and is_private(node.attr)
    )


def _attribute_call(node: ast.Call, path: str, allowed: frozenset[str]) -> Iterator[Finding]:
    if not (isinstance(node.func, ast.Name) and node.func.id in ATTRIBUTE_BUILTINS and len(node.args) >= 2):
        return
    target, name = node.args[0], node.args[1]
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        return
    if not is_private(name.value) or name.value in allowed:
        return
    if isinstance(target, ast.Name) and target.id in SELF_NAMES:
        return  # an object's own attribute, as SLF001 allows ``self._x``
    yield Finding(path, node.lineno, f"{node.func.id}(..., {name.value!r})")


def _import_from(node: ast.ImportFrom, path: str, module: str) -> Iterator[Finding]:
    source = _absolute(node, module)
    if is_own(source):
        return
    if part := private_part(source):
        yield Finding(path, node.lineno, f"from {source} import ... (private module {part})")
        return
    for alias in node.names:
        if is_private(alias.name):
            yield Finding(path, node.lineno, f"from {source} import {alias.name}")


def _absolute(node: ast.ImportFrom, module: str) -> str:
    """The module an import names, with a relative import resolved against ``module``."""
    if not node.level:
        return node.module or ""
    package = module.split(".")[: -node.level] if module else []
    return ".".join([*package, *([node.module] if node.module else [])])


def scanned_files() -> Iterator[Path]:
    for top in SCANNED:
        yield from sorted((ROOT / top).rglob("*.py"))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.append("__init__")  # a package's relative imports start from the package itself
    return ".".join(parts)


def test_the_scan_covers_the_app_the_benchmarks_and_the_example_project() -> None:
    tops = {path.relative_to(ROOT).parts[0] for path in scanned_files()}
    assert tops == set(SCANNED)


def test_no_private_name_of_another_package_is_used() -> None:
    allowed = documented_names()
    found = [
        str(finding)
        for path in scanned_files()
        for finding in findings_in(
            path.read_text(), str(path.relative_to(ROOT)), module=module_name(path), allowed=allowed
        )
    ]
    assert found == [], "\n".join(["private names of other packages:", *found])


# -- the scan itself ---------------------------------------------------------------------


def scan(source: str, module: str = "pkg.mod") -> list[str]:
    return [
        f.what
        for f in findings_in(textwrap.dedent(source), "x.py", module=module, allowed=frozenset({"_meta"}))
    ]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('getattr(request, "_request", None)', ["getattr(..., '_request')"]),
        ('hasattr(obj, "_state")', ["hasattr(..., '_state')"]),
        ('setattr(obj, "_cache", 1)', ["setattr(..., '_cache')"]),
        ('delattr(obj, "_cache")', ["delattr(..., '_cache')"]),
        (
            "from langgraph.checkpoint.serde import _msgpack",
            ["from langgraph.checkpoint.serde import _msgpack"],
        ),
        (
            "from langgraph._internal._constants import CONF",
            ["from langgraph._internal._constants import ... (private module _internal)"],
        ),
        ("import asyncio._private", ["import asyncio._private"]),
        ("import langgraph._internal._constants as c", ["import langgraph._internal._constants"]),
    ],
)
def test_the_scan_sees_private_names_read_by_string_or_imported(source: str, expected: list[str]) -> None:
    assert scan(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        'getattr(obj, "__name__")',  # dunder: the language's, not a package's private name
        'getattr(obj, "name", None)',
        'getattr(obj, "_meta")',  # documented by Django, allowed in pyproject like SLF001
        'getattr(self, "_cache", None)',  # an object's own attribute
        'getattr(cls, "_registry")',
        "getattr(obj, name)",  # not a constant: nothing to judge
        "from __future__ import annotations",
        "from turnstate_app.contrib._lazy import lazy_exports",  # the app's own private module
        "import turnstate_app.contrib._text",
        "from turnstate_app.contrib import _retention",
        "from django.utils.translation import gettext as _",
    ],
)
def test_the_scan_leaves_public_and_own_names_alone(source: str) -> None:
    assert scan(source) == []


def test_an_attribute_the_module_sets_itself_is_its_own() -> None:
    marks = 'held._mark = 1\nstart = getattr(held, "_mark", 0)\n'
    assert scan(marks) == []
    assert scan('other._mark = 1\ngetattr(request, "_request")\n') == ["getattr(..., '_request')"]


def test_relative_imports_resolve_against_the_module_that_makes_them() -> None:
    own = "from .._lazy import lazy_exports\nfrom . import _text\n"
    assert scan(own, module="turnstate_app.contrib.langgraph.saver") == []
    assert scan("from . import _text\n", module="turnstate_app.contrib.__init__") == []
    assert scan("from . import _helpers\n", module="other.pkg.mod") == ["from other.pkg import _helpers"]


def test_the_allowed_names_are_the_ones_ruff_is_told_to_ignore() -> None:
    assert {"_meta", "_default_manager"} <= documented_names()


# -- what replaced them: the request DRF hands the exception handler -----------------------


@pytest.fixture
def owner() -> Any:
    return UserFactory()


# Django 6 takes plain addresses and deprecates (name, address) pairs; 5.2 takes only pairs.
ADMINS: list[Any] = ["ops@example.com"] if django.VERSION >= (6,) else [("Ops", "ops@example.com")]


def reported(caplog: pytest.LogCaptureFixture) -> Any:
    """The response's django.request error record and the e-mail Django's logging sent the admins."""
    [record] = [r for r in caplog.records if r.name == "django.request" and r.levelname == "ERROR"]
    [message] = mail.outbox  # Django's default LOGGING: mail_admins, when DEBUG is off
    return record, message


@pytest.mark.django_db
def test_a_bug_reaches_the_admins_report_with_its_request(
    owner: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, settings: Any
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    settings.ADMINS = ADMINS
    monkeypatch.setattr("turnstate_app.api.views.resume_pause", broken)
    client = APIClient(raise_request_exception=False)
    client.force_login(owner)
    heard: list[Any] = []

    def listener(**kwargs: Any) -> None:
        heard.append(kwargs["request"])

    got_request_exception.connect(listener)
    try:
        assert client.post(RESUME, {"token": "t", "answer": 1}, format="json").status_code == 500
    finally:
        got_request_exception.disconnect(listener)

    record, message = reported(caplog)
    assert record.request.path == RESUME and record.request.user == owner
    assert [request.path for request in heard] == [RESUME]
    assert RESUME in message.body and "RuntimeError" in message.body


@pytest.mark.django_db
def test_a_503_before_the_body_is_read_reaches_the_admins_report(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, settings: Any
) -> None:
    """A body nobody parsed yet (malformed, even) does not stop the report of the failure."""

    def down(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("the database went away")

    settings.ADMINS = ADMINS
    monkeypatch.setattr(SessionAuthentication, "authenticate", down)
    client = APIClient()
    response = client.post(RESUME, '{"token": "t", "answer":', content_type="application/json")
    assert response.status_code == 503

    record, message = reported(caplog)
    assert record.request.path == RESUME
    assert RESUME in message.body and "OperationalError" in message.body


class BrokenView(KeepsDjangoRequest):
    """A view on the app's error handler whose database is down before the body is read."""

    permission_classes: list[Any] = []

    def get_exception_handler(self) -> Any:
        return turnstate_exception_handler

    def post(self, request: Any) -> Any:
        raise OperationalError("the database went away")


def test_a_view_keeping_its_django_request_hands_it_to_the_report(
    caplog: pytest.LogCaptureFixture, settings: Any
) -> None:
    settings.ADMINS = ADMINS
    sent = APIRequestFactory().post("/broken/", '{"token": "t", "answer":', content_type="application/json")
    assert BrokenView.as_view()(sent).status_code == 503

    record, message = reported(caplog)
    assert isinstance(record.request, HttpRequest) and record.request is sent
    assert "/broken/" in message.body and "OperationalError" in message.body
