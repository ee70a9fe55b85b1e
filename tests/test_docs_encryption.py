"""The encryption-at-rest table names every column the ledger keeps in clear.

Nothing on the ledger is encrypted, and some of it is more than ids: a reader deciding what may
go into a pause must find each column there, so a column added to ``Pause`` fails here until
the page says it is stored clear.
"""

from __future__ import annotations

import re
from pathlib import Path

from turnstate_app.models import Pause

PAGE = (Path(__file__).resolve().parent.parent / "docs" / "settings-and-checks.md").read_text()


def ledger_row() -> str:
    (row,) = [line for line in PAGE.splitlines() if line.startswith("| `turnstate_app.Pause` (the ledger) |")]
    return row


def test_every_clear_column_of_the_ledger_is_named() -> None:
    named = set(re.findall(r"`(\w+)`", ledger_row()))
    columns = {field.name for field in Pause._meta.concrete_fields if not field.primary_key}
    assert columns - named == set()


def test_the_columns_that_hold_more_than_ids_are_said_to() -> None:
    row = ledger_row()
    assert "PydanticAI" in row and "enum" in row  # what an answer schema can hold
    assert "only ids" not in row and "all its columns: ids, status, times, digests" not in row
