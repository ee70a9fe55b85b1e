"""The ledger's rules as SQL text agree with their ``Q`` row for row.

A resume runs its read and its consuming UPDATE as SQL text (one statement each, on
Django's cursor); their conditions come from ``pending_sql`` and ``effective_status_sql``,
kept beside the ``Q`` of ``PauseQuerySet``. These tests hold each pair equal on rows around
every boundary: pending, answered and expired, just before, at and after their age.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.db import connection
from django.db.models import Field
from django.utils import timezone

from tests.factories import PauseFactory
from turnstate_app.choices import PauseStatus
from turnstate_app.managers import EFFECTIVE_STATUS, effective_status_q, effective_status_sql, pending_sql
from turnstate_app.models import Pause
from turnstate_app.ports.execution import run_statement
from turnstate_app.ports.ledger import consume_statement

pytestmark = pytest.mark.django_db


def column(name: str) -> str:
    field = Pause._meta.get_field(name)
    assert isinstance(field, Field) and field.column
    return connection.ops.quote_name(field.column)


def rows_around(now: datetime) -> dict[str, tuple[str, datetime]]:
    """A row per status and age: just before, exactly at, and after ``now``."""
    ages = {"past": now - timedelta(seconds=1), "at": now, "ahead": now + timedelta(seconds=1)}
    made = {}
    for status in PauseStatus:
        for age_name, expires_at in ages.items():
            pause = PauseFactory.create(status=status.value, expires_at=expires_at)
            made[pause.jti] = (f"{status.value}/{age_name}", expires_at)
    return made


def test_pending_sql_selects_exactly_what_its_q_selects() -> None:
    now = timezone.now()
    rows_around(now)
    condition, params = pending_sql(column, connection.ops.adapt_datetimefield_value(now))
    table = connection.ops.quote_name(Pause._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {column('jti')} FROM {table} WHERE {condition}", params)
        by_sql = {row[0] for row in cursor.fetchall()}
    by_q = set(
        Pause.objects.filter(effective_status_q(PauseStatus.PENDING, now)).values_list("jti", flat=True)
    )
    assert by_sql == by_q
    assert len(by_q) == 1  # pending, ahead of its age: the boundary itself is expired


def test_effective_status_sql_gives_exactly_its_annotation() -> None:
    now = timezone.now()
    rows_around(now)
    expression, params = effective_status_sql(column, connection.ops.adapt_datetimefield_value(now))
    table = connection.ops.quote_name(Pause._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {column('jti')}, {expression} FROM {table}", params)
        by_sql = dict(cursor.fetchall())
    by_annotation = dict(Pause.objects.with_effective_status(now).values_list("jti", EFFECTIVE_STATUS))
    assert by_sql == by_annotation
    assert sorted(by_annotation.values()).count(PauseStatus.EXPIRED.value) == 5


def test_the_consuming_update_changes_exactly_what_consume_changes() -> None:
    """Each row consumed once through ``PauseQuerySet.consume`` and once through the resume's
    statement (the first undone before the second): the same rows win, with the same values."""
    now = timezone.now()
    made = rows_around(now)
    for jti, (label, _) in made.items():
        won_by_q = Pause.objects.consume(jti, now=now)
        after_q = Pause.objects.values("status", "answered_at").get(jti=jti)
        Pause.objects.filter(jti=jti).update(status=label.split("/")[0], answered_at=None)
        sql, params = consume_statement(connection, "default", jti, now)
        won_by_sql = run_statement(connection, sql, params, first_row=False)[0] == 1
        after_sql = Pause.objects.values("status", "answered_at").get(jti=jti)
        assert (won_by_sql, after_sql) == (won_by_q, after_q), label
