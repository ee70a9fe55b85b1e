"""One file states what is supported (``matrix.toml``); everything that repeats it must agree.

``requires-python``, the classifiers and the Django range in ``pyproject.toml``, the Makefile's
legs (which Python and Django each environment installs, which databases each target runs on),
``.ci/run``, the README's install line and the docs' table are each checked against it, so a
version added in one place and forgotten in another fails here instead of drifting.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
MATRIX: list[dict[str, Any]] = tomllib.loads((ROOT / "matrix.toml").read_text())["leg"]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
MAKEFILE = (ROOT / "Makefile").read_text()
CI_RUN = (ROOT / ".ci" / "run").read_text()

PYTHONS = {leg["python"] for leg in MATRIX}
DJANGOS = {leg["django"] for leg in MATRIX}
DATABASE_URLS = {
    "DATABASE_URL= ": "sqlite",
    "DATABASE_URL=$(PG_URL)": "postgresql",
    "DATABASE_URL=$(MARIADB_URL)": "mariadb",
}
DATABASE_NAMES = {"sqlite": "SQLite", "postgresql": "PostgreSQL", "mariadb": "MariaDB"}


def make_rules(makefile: str) -> dict[str, tuple[list[str], list[str]]]:
    """Each target's prerequisites (order-only ones included) and recipe lines."""
    rules: dict[str, tuple[list[str], list[str]]] = {}
    current: list[str] | None = None
    for line in makefile.replace("\\\n", " ").splitlines():
        if line.startswith("\t"):
            if current is not None:
                current.append(line.strip())
            continue
        current = None
        rule = re.match(r"^([^\s:=#.][^:=]*?):(?!=)(.*)$", line)
        if rule:
            recipe: list[str] = []
            for target in rule[1].split():
                rules[target] = (rule[2].replace("|", " ").split(), recipe)
            current = recipe
    return rules


RULES = make_rules(MAKEFILE)
VARIABLES = dict(re.findall(r"^(\w+) [:?]?= (.+)$", MAKEFILE, re.MULTILINE))


def recipe_lines(target: str) -> list[str]:
    """The recipe of ``target`` and of every test target it runs through: a prerequisite
    (``test-django6: test-django6-sqlite ...``) or a target its recipe makes
    (``$(MAKE) -j2 test-sqlite ...``)."""
    prerequisites, recipe = RULES[target]
    lines = list(recipe)
    made = [word for line in recipe if "$(MAKE)" in line for word in line.split()]
    for prerequisite in [*prerequisites, *made]:
        if prerequisite in RULES and not prerequisite.startswith("$(") and prerequisite.startswith("test"):
            lines += recipe_lines(prerequisite)
    return lines


def environment_of(target: str) -> str:
    """The virtualenv variable (``VENV``, ``VENV6``) whose pytest the target runs."""
    venvs: set[str] = {
        found for line in recipe_lines(target) for found in re.findall(r"\$\((VENV\d*)\)/bin/pytest", line)
    }
    assert len(venvs) == 1, (target, venvs)
    return venvs.pop()


def django_pin(venv: str) -> SpecifierSet:
    """The Django range the environment's ``.installed`` rule installs."""
    _, recipe = RULES[f"$({venv})/.installed"]
    pins = {pin for line in recipe for pin in re.findall(r"'Django(>=[^']+)'", line)}
    assert len(pins) == 1, (venv, pins)
    return SpecifierSet(pins.pop())


def python_of(venv: str) -> str:
    """The Python the environment is made with: the first version its interpreter variable looks for."""
    _, recipe = RULES[f"$({venv})/.installed"]
    variable = next(found for line in recipe for found in re.findall(r"\$\((PYTHON\w*)\) -m venv", line))
    versions: list[str] = re.findall(r"find_python,(3\.\d+)", VARIABLES[variable])
    return versions[0]


def test_the_matrix_is_not_empty_and_names_known_databases() -> None:
    assert MATRIX
    for leg in MATRIX:
        assert set(leg["databases"]) <= set(DATABASE_NAMES), leg


def test_requires_python_starts_at_the_oldest_python_tested() -> None:
    requires = SpecifierSet(PYPROJECT["requires-python"])
    oldest = min(PYTHONS, key=Version)
    assert requires == SpecifierSet(f">={oldest}")
    assert all(Version(python) in requires for python in PYTHONS)


def test_the_classifiers_name_exactly_the_matrix() -> None:
    classifiers = PYPROJECT["classifiers"]
    pythons = {
        c.rsplit(" :: ", 1)[1]
        for c in classifiers
        if re.match(r"Programming Language :: Python :: 3\.\d+$", c)
    }
    djangos = {c.rsplit(" :: ", 1)[1] for c in classifiers if re.match(r"Framework :: Django :: \d", c)}
    assert pythons == PYTHONS
    assert djangos == DJANGOS


def test_the_django_dependency_admits_every_django_tested() -> None:
    (django,) = [dep for dep in PYPROJECT["dependencies"] if re.match(r"Django\b", dep)]
    allowed = SpecifierSet(django.removeprefix("Django"))
    for version in DJANGOS:
        assert Version(version) in allowed, (version, django)
    # and no Django above the newest tested major: the upper bound is the next major.
    newest = max(DJANGOS, key=Version)
    assert Version(f"{Version(newest).major + 1}.0") not in allowed


@pytest.mark.parametrize("leg", MATRIX, ids=lambda leg: f"py{leg['python']}-django{leg['django']}")
def test_each_leg_has_make_targets_on_its_python_django_and_databases(leg: dict[str, Any]) -> None:
    databases: set[str] = set()
    for target in leg["make"]:
        assert target in RULES, f"the Makefile has no target {target}"
        venv = environment_of(target)
        assert python_of(venv) == leg["python"], (target, venv)
        assert Version(leg["django"]) in django_pin(venv), (target, venv, django_pin(venv))
        for line in recipe_lines(target):
            databases |= {name for url, name in DATABASE_URLS.items() if url in line}
    assert databases == set(leg["databases"]), leg


def test_every_leg_runs_in_ci() -> None:
    lanes = " ".join(re.findall(r"^lane \w+ (.+?) &$", CI_RUN, re.MULTILINE)).split()
    for leg in MATRIX:
        for target in leg["make"]:
            assert target in lanes, f".ci/run never runs make {target}"


def test_the_docs_table_states_the_matrix() -> None:
    page = (ROOT / "docs" / "getting-started.md").read_text()
    section = page.split("## Supported versions", 1)[1].split("\n## ", 1)[0]
    rows = {
        tuple(cell.strip() for cell in line.strip("|").split("|"))
        for line in section.splitlines()
        if re.match(r"^\| 3\.\d+ \|", line)
    }
    expected = {
        (leg["python"], leg["django"], ", ".join(DATABASE_NAMES[db] for db in leg["databases"]))
        for leg in MATRIX
    }
    assert rows == expected


def test_the_readme_install_line_states_the_matrix() -> None:
    readme = (ROOT / "README.md").read_text()
    (line,) = [line for line in readme.splitlines() if line.startswith("Python >= ")]
    assert line.startswith(f"Python >= {min(PYTHONS, key=Version)};")
    for django in DJANGOS:
        assert re.search(rf"\b{Version(django).major}\.", line), (django, line)
    for database in {db for leg in MATRIX for db in leg["databases"]}:
        assert DATABASE_NAMES[database] in line, (database, line)


def test_the_running_django_is_the_one_the_matrix_names_for_this_python() -> None:
    """The matrix names what is tested: each leg's environment installs the newest Django its pin
    admits, and that release is the one the table, the classifiers and the README claim."""
    import sys

    import django

    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    legs = [leg for leg in MATRIX if leg["python"] == running]
    if not legs:
        pytest.skip(f"Python {running} is no leg's: a local run outside the matrix")
    assert f"{django.VERSION[0]}.{django.VERSION[1]}" in {leg["django"] for leg in legs}
