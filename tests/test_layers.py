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
STORAGE = {"models.py", "managers.py", "choices.py"}
LEDGER_FIELDS = {"status", "answered_at", "handed_off_at", "expires_at", "resumable", "owner", "owner_id"}
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
