"""The ledger's state changes and its notion of age live in storage only.

``lint-imports`` (``make lint``) holds the import layers; this holds what an import rule
cannot see: an UPDATE of a pause, or a comparison with ``expires_at``, written anywhere
outside the storage modules would be a second definition of a state change or of expiry.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "turnstate_app"
STORAGE = {"models.py", "managers.py", "choices.py", "after_answer.py"}
LEDGER_FIELDS = {
    "status",
    "answered_at",
    "handed_off_at",
    "expires_at",
    "resumable",
    "owner",
    "owner_id",
    "unresumable_reason",
    "continuation",
    "continuation_since",
    "continuation_reason",
    "continuation_attempts",
    "continuation_retry_at",
}
AGE_LOOKUPS = {f"expires_at__{op}" for op in ("lt", "lte", "gt", "gte", "range")}


def outside_storage() -> list[Path]:
    return [
        path
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] != "migrations" and path.name not in STORAGE
    ]


def offences(source: str) -> list[str]:
    """Every ledger UPDATE and every ``expires_at`` comparison in ``source``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            names = {keyword.arg for keyword in node.keywords if keyword.arg}
            if isinstance(node.func, ast.Attribute) and node.func.attr == "update" and names & LEDGER_FIELDS:
                found.append(f"line {node.lineno}: UPDATE of {sorted(names & LEDGER_FIELDS)}")
            if names & AGE_LOOKUPS:
                found.append(f"line {node.lineno}: filter on {sorted(names & AGE_LOOKUPS)}")
        elif isinstance(node, ast.Constant) and node.value in AGE_LOOKUPS:
            found.append(f"line {node.lineno}: lookup {node.value!r}")
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(isinstance(o, ast.Attribute) and o.attr == "expires_at" for o in operands):
                found.append(f"line {node.lineno}: comparison with expires_at")
    return found


@pytest.mark.parametrize("path", outside_storage(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_ledger_update_or_age_comparison_outside_storage(path: Path) -> None:
    assert offences(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    "snippet",
    [
        "Pause.objects.filter(jti=j).update(status='answered')",
        "pauses.filter(jti=j, handed_off_at__isnull=True).update(handed_off_at=now)",
        "Pause.objects.filter(expires_at__lte=now)",
        "Q(status='pending', expires_at__gt=now)",
        "if pause.expires_at <= now: pass",
        "queryset.filter(**{'expires_at__lt': now})",
    ],
)
def test_the_rule_finds_what_it_forbids(snippet: str) -> None:
    assert offences(snippet)


def test_the_rule_leaves_other_updates_alone() -> None:
    assert offences("rows.update({'a': 1}); settings.update(key=1); seen = expires_at") == []


def test_storage_itself_holds_the_definitions() -> None:
    managers = (PACKAGE / "managers.py").read_text(encoding="utf-8")
    assert offences(managers), "the state changes and expiry are defined in managers.py"


# -- one path to the database ---------------------------------------------------------------

SECOND_ENGINE = {
    "needs_rollback": r"\bneeds_rollback\b",
    "health_check_*": r"\bhealth_check_\w+",
    "a cache in an object's __dict__": r"__dict__\s*(\[|\.get\b|\.setdefault\b)",
    "vars(settings)": r"\bvars\(\s*settings\s*\)",
    "BEGIN/COMMIT/ROLLBACK sent by hand": r"""["'](BEGIN|COMMIT|ROLLBACK)\b""",
    "a driver cursor of the app's own": r"\bpsycopg\.(Client)?Cursor\b|\.connection\.cursor\(\)",
    "Django's error translation called by hand": r"wrap_database_errors",
}
"""What no lint rule sees: a second execution engine beside Django's cursor (ruff's SLF001 and
TID251 catch private names and the banned imports)."""

VENDORS = r"""["'](postgresql|sqlite|mysql)["']|\bvendor\b"""


def engine_offences(source: str) -> list[str]:
    import re

    return [
        f"line {source.count(chr(10), 0, found.start()) + 1}: {name}"
        for name, pattern in SECOND_ENGINE.items()
        for found in re.finditer(pattern, source)
    ]


@pytest.mark.parametrize(
    "path",
    [p for p in sorted(PACKAGE.rglob("*.py")) if "migrations" not in p.parts],
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_every_statement_takes_djangos_path(path: Path) -> None:
    assert engine_offences(path.read_text()) == []


@pytest.mark.parametrize(
    "snippet",
    [
        "if connection.needs_rollback: pass",
        "connection.health_check_done = True",
        "connection.__dict__['_cursor'] = c",
        "state = wrapper.__dict__.get('x')",
        "READ = vars(settings)",
        'driver.execute("BEGIN")',
        "cursor.execute('COMMIT')",
        "psycopg.Cursor(driver)",
        "cursor = connection.connection.cursor()",
        "connection.wrap_database_errors.__exit__(None, None, None)",
    ],
)
def test_the_engine_rule_finds_what_it_forbids(snippet: str) -> None:
    assert engine_offences(snippet)


def test_the_engine_rule_leaves_djangos_path_alone() -> None:
    assert engine_offences("with connection.cursor() as cursor:\n    cursor.execute(sql, params)\n") == []


def test_the_lifecycle_never_names_a_database_vendor() -> None:
    """The lifecycle (``pauses/``) calls one storage function per step; how a statement travels
    on each database is storage's business."""
    import re

    named = {
        str(path.relative_to(PACKAGE)): re.findall(VENDORS, path.read_text())
        for path in sorted((PACKAGE / "pauses").rglob("*.py"))
    }
    assert {path: found for path, found in named.items() if found} == {}
