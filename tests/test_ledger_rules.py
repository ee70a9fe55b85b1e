"""The resume's consuming UPDATE is the ORM's own, compiled once and run with each call's values.

``consuming_statement`` compiles ``PauseQuerySet.consumable``'s UPDATE once per database, with
markers where a call's values go (PostgreSQL runs it inside the statement that also stores the
answer). Bound to a call's values, it must change exactly the rows, with exactly the values,
that ``consume`` changes: on rows around every boundary (pending, answered and expired, just
before, at and after their age).
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.db import connection
from django.utils import timezone

from tests.factories import PauseFactory
from turnstate_app.choices import PauseStatus
from turnstate_app.managers import EFFECTIVE_STATUS
from turnstate_app.models import Pause
from turnstate_app.ports.compiled import MARKED_TIME, compiled_select, compiled_update, marker
from turnstate_app.ports.execution import run_statement
from turnstate_app.ports.ledger import consuming_statement, read_pause

pytestmark = pytest.mark.django_db


def rows_around(now: datetime) -> dict[str, tuple[str, datetime]]:
    """A row per status and age: just before, exactly at, and after ``now``."""
    ages = {"past": now - timedelta(seconds=1), "at": now, "ahead": now + timedelta(seconds=1)}
    made = {}
    for status in PauseStatus:
        for age_name, expires_at in ages.items():
            pause = PauseFactory.create(status=status.value, expires_at=expires_at)
            made[pause.jti] = (f"{status.value}/{age_name}", expires_at)
    return made


def test_the_consuming_update_changes_exactly_what_consume_changes() -> None:
    """Each row consumed once through ``PauseQuerySet.consume`` and once through the resume's
    statement (the first undone before the second): the same rows win, with the same values."""
    now = timezone.now()
    made = rows_around(now)
    for jti, (label, _) in made.items():
        won_by_q = Pause.objects.consume(jti, now=now)
        after_q = Pause.objects.values("status", "answered_at").get(jti=jti)
        Pause.objects.filter(jti=jti).update(status=label.split("/")[0], answered_at=None)
        statement = consuming_statement("default")
        sql, params = (
            statement.sql,
            statement.bind({"jti": jti, "now": now, "trace": None, "answer_mac": None}),
        )
        won_by_sql = run_statement(connection, sql, params, first_row=False)[0] == 1
        after_sql = Pause.objects.values("status", "answered_at").get(jti=jti)
        assert (won_by_sql, after_sql) == (won_by_q, after_q), label


def test_the_compiled_read_gives_the_row_the_query_gives() -> None:
    """The resume's read, compiled once, returns each row as the ORM's own query returns it:
    every field converted (a JSON schema decoded, times aware) and the effective status."""
    now = timezone.now()
    made = rows_around(now)
    Pause.objects.update(answer_schema={"type": "string", "enum": ["yes", "no"]})
    by_query = {p.jti: p for p in Pause.objects.with_effective_status(now)}
    for jti, (label, _) in made.items():
        pause = by_query[jti]
        read = read_pause(using="default", claims=pause.claims, now=now)
        assert read.pause is not None, label
        fields = [field.attname for field in Pause._meta.concrete_fields]
        assert [getattr(read.pause, f) for f in fields] == [getattr(pause, f) for f in fields], label
        assert getattr(read.pause, EFFECTIVE_STATUS) == getattr(pause, EFFECTIVE_STATUS), label
        assert read.turn_state is None and not read.request_recorded


def test_a_value_the_orm_does_not_pass_as_a_parameter_is_refused_at_compile() -> None:
    consumable = Pause.objects.consumable(marker("jti"), now=MARKED_TIME)
    with pytest.raises(AssertionError, match="no parameter for 'owner'"):
        compiled_update(consumable, {"status": "answered"}, ("jti", "now", "owner"))
    with pytest.raises(ValueError, match="every column"):
        compiled_select(Pause.objects.only("jti"), ("now",))
