"""Every table that holds a column encrypted at rest, as ``turnstate_rotate_keys`` walks them.

Each app registers its own tables when it is ready (the core its store rows, each integration
its own), so the command never imports an integration: an integration's table is rotated
exactly when that integration is installed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Model, Q

__all__ = ["SealedTable", "register", "registered"]


@dataclass(frozen=True)
class SealedTable:
    """One encrypted column: ``value`` sealed with the keys of the row's ``thread``, its key id in ``key_id``.

    ``scope`` narrows the table to the rows that are sealed at all (the store's claims stay clear).
    ``binary``: the column holds bytes (else text, whose tokens are ASCII).
    ``identity``: the columns that name a row, in the order its MAC (:mod:`turnstate_app.integrity`)
    takes them; ``mac``: the column that holds it. The MAC's table is :attr:`label` of the model
    (``model._meta.label``).
    """

    model: type[Model]
    value: str
    thread: str = "thread_id"
    key_id: str = "encryption_key_id"
    binary: bool = False
    scope: Q = field(default_factory=Q)
    identity: tuple[str, ...] = ()
    mac: str = "value_mac"

    @property
    def label(self) -> str:
        return f"{self.model._meta.label}.{self.value}"

    @property
    def table(self) -> str:
        """The table's name in its rows' MACs."""
        return self.model._meta.label


_tables: dict[str, SealedTable] = {}


def register(table: SealedTable) -> None:
    """Add ``table`` (once per label: an app's ``ready`` may run twice in tests)."""
    _tables[table.label] = table


def registered() -> list[SealedTable]:
    """Every registered table, in registration order (the core's first)."""
    return list(_tables.values())
