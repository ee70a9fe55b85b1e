"""A queryset compiled once per database, then run again with each call's values.

The resume's read and its consuming UPDATE are the ORM's own statements: their conditions are
the ledger's ``Q`` (:mod:`turnstate_app.managers`), never restated here. Compiling them anew costs
more than running them, so each is compiled once per database alias with a marker standing in
every place a call's value goes, and each call puts its values in those places. The SQL is the
ORM's, character for character; only the parameters change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import connections
from django.db.models import QuerySet
from django.db.models.sql import UpdateQuery

from turnstate_app.ports.execution import run_statement

MARKED_TIME = datetime(2001, 2, 3, 4, 5, 6, 789012, tzinfo=UTC)
"""The marker of a call's time: no call is ever made at this instant."""


def marker(name: str) -> str:
    """The marker of the value ``name``: text no identifier of a pause can hold (a control character)."""
    return f"\x1fturnstate:{name}\x1f"


@dataclass(frozen=True)
class Compiled:
    """A statement as the ORM compiled it, and where each named value goes in its parameters."""

    sql: str
    params: tuple[Any, ...]
    slots: tuple[tuple[str, tuple[int, ...]], ...]
    alias: str

    def bind(self, values: Mapping[str, Any]) -> tuple[Any, ...]:
        """The parameters with ``values`` in their places (a time adapted as the ORM adapts it)."""
        params = list(self.params)
        ops = connections[self.alias].ops
        for name, positions in self.slots:
            value = values[name]
            if isinstance(value, datetime):
                value = ops.adapt_datetimefield_value(value)
            for position in positions:
                params[position] = value
        return tuple(params)


def compiled(sql: str, params: tuple[Any, ...], names: tuple[str, ...], *, alias: str) -> Compiled:
    """``sql`` and ``params`` compiled with :func:`marker` values (and :data:`MARKED_TIME` for the
    name ``now``), each marker's places found. A marker the ORM did not pass as a parameter
    would leave a call's value out: refused here, at the first compile."""
    adapted_time = connections[alias].ops.adapt_datetimefield_value(MARKED_TIME)
    slots = []
    for name in names:
        mark = adapted_time if name == "now" else marker(name)
        positions = tuple(
            i for i, param in enumerate(params) if isinstance(param, type(mark)) and param == mark
        )
        if not positions:
            raise AssertionError(f"the compiled statement takes no parameter for {name!r}: {sql}")
        slots.append((name, positions))
    return Compiled(sql, params, tuple(slots), alias)


@dataclass(frozen=True)
class CompiledRow(Compiled):
    """A SELECT of one model's rows (every column, then annotations), compiled once: each row it
    returns becomes the instance a query would give, its annotations set on it."""

    model: Any = None
    attnames: tuple[str, ...] = ()
    converters: tuple[tuple[int, Any, tuple[Any, ...]], ...] = ()
    annotations: tuple[str, ...] = ()

    def first(self, values: Mapping[str, Any]) -> Any:
        """The first row for ``values`` as a model instance (None: no row)."""
        connection = connections[self.alias]
        row = run_statement(connection, self.sql, self.bind(values))[1]
        if row is None:
            return None
        width = len(self.attnames)
        columns = list(row[:width])
        for i, expression, converters in self.converters:
            for convert in converters:
                columns[i] = convert(columns[i], expression, connection)
        instance = self.model.from_db(self.alias, list(self.attnames), columns)
        for name, value in zip(self.annotations, row[width:], strict=True):
            setattr(instance, name, value)
        return instance


def compiled_select(queryset: QuerySet[Any], names: tuple[str, ...]) -> CompiledRow:
    """``queryset``'s SELECT of whole rows (and its annotations), built with markers for ``names``."""
    query = queryset.query
    if not query.default_cols or query.deferred_loading != (frozenset(), True):
        raise ValueError("a compiled row reads every column of its model")
    connection = connections[queryset.db]
    meta = queryset.model._meta
    sql, params = query.get_compiler(queryset.db).as_sql()
    converters = tuple(
        (i, column, found)
        for i, field in enumerate(meta.concrete_fields)
        for column in [field.get_col(meta.db_table)]
        for found in [tuple(connection.ops.get_db_converters(column) + field.get_db_converters(connection))]
        if found
    )
    statement = compiled(sql, tuple(params), names, alias=queryset.db)
    return CompiledRow(
        statement.sql,
        statement.params,
        statement.slots,
        statement.alias,
        model=queryset.model,
        attnames=tuple(field.attname for field in meta.concrete_fields),
        converters=converters,
        annotations=tuple(query.annotation_select),
    )


def compiled_update(queryset: QuerySet[Any], values: dict[str, Any], names: tuple[str, ...]) -> Compiled:
    """``queryset.update(**values)`` compiled, not run, built with markers for ``names``."""
    query = queryset.query.chain(UpdateQuery)
    assert isinstance(query, UpdateQuery)
    query.add_update_values(values)
    sql, params = query.get_compiler(queryset.db).as_sql()
    return compiled(sql, tuple(params), names, alias=queryset.db)
