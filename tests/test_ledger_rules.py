"""The consuming UPDATE that PostgreSQL runs inside the answer's statement is the ORM's own.

``update_statement`` compiles ``PauseQuerySet.consumable``'s UPDATE without running it, for the
data-modifying ``WITH`` that also stores the answer. Run alone, it must change exactly the rows,
with exactly the values, that ``consume`` changes: on rows around every boundary (pending,
answered and expired, just before, at and after their age).
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.db import connection
from django.utils import timezone

from tests.factories import PauseFactory
from turnstate_app.after_answer import answered_values
from turnstate_app.choices import PauseStatus
from turnstate_app.models import Pause
from turnstate_app.ports.execution import run_statement, update_statement

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
        sql, params = update_statement(Pause.objects.consumable(jti, now=now), answered_values(now))
        won_by_sql = run_statement(connection, sql, params, first_row=False)[0] == 1
        after_sql = Pause.objects.values("status", "answered_at").get(jti=jti)
        assert (won_by_sql, after_sql) == (won_by_q, after_q), label
