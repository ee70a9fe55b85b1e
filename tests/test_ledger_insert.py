"""A mint's ledger row goes in as ``Model.save(force_insert=True)`` would put it, in one statement.

The INSERT is built once per database from the model's ``_meta`` (``ports.ledger.insert_pause``);
these tests hold it to what the ORM does: the same stored values, Django's saving signals,
an instance that is saved, and the primary key read back where the database cannot return it.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.db.models.signals import post_save, pre_save
from django.utils import timezone

from tests.factories import UserFactory, make_claims
from tests.pause_helpers import mint
from turnstate_app.managers import new_pause
from turnstate_app.models import Pause
from turnstate_app.ports.ledger import insert_pause, insert_statement

pytestmark = pytest.mark.django_db

FIELDS = {
    "request_key": "ask_user_request:call-x",
    "answer_schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
    "group": "group-1",
    "agent": "booking",
    "shown_digest": "d" * 64,
}


def unsaved(n: int, owner: Any) -> Pause:
    claims = make_claims(run_id=f"run-{n}", thread_id=f"thread-{n}", tool_call_id=f"call-{n}")
    expires = timezone.now() + timedelta(hours=1)
    return new_pause(Pause, claims, resumable=True, owner=owner, expires_at=expires, **FIELDS)


def stored(pk: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict(Pause.objects.filter(pk=pk).values().get())
    varying = ("id", "jti", "run_id", "thread_id", "tool_call_id", "created_at")
    return {name: value for name, value in row.items() if name not in varying}


@pytest.fixture
def fresh_statement() -> Iterator[None]:
    insert_statement.cache_clear()
    yield
    insert_statement.cache_clear()


def test_the_row_stored_is_the_one_save_stores() -> None:
    owner = UserFactory.create()
    by_orm = unsaved(1, owner)
    by_orm.expires_at = expires = timezone.now() + timedelta(hours=1)
    by_orm.save(force_insert=True)
    ours = unsaved(2, owner)
    ours.expires_at = expires
    saved = insert_pause(ours, using="default")
    assert saved.pk is not None and saved.pk != by_orm.pk
    assert stored(saved.pk) == stored(by_orm.pk)
    row = Pause.objects.get(pk=saved.pk)
    assert row.answer_schema == FIELDS["answer_schema"] and row.owner == owner
    assert row.created_at is not None and abs(row.created_at - timezone.now()) < timedelta(minutes=1)


def test_saving_signals_are_sent_as_save_sends_them() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    def before(**kwargs: Any) -> None:
        seen.append(("pre_save", kwargs))

    def after(**kwargs: Any) -> None:
        seen.append(("post_save", kwargs))

    pre_save.connect(before, sender=Pause)
    post_save.connect(after, sender=Pause)
    try:
        minted = mint()
    finally:
        pre_save.disconnect(before, sender=Pause)
        post_save.disconnect(after, sender=Pause)
    assert [name for name, _ in seen] == ["pre_save", "post_save"]
    (_, pre), (_, post) = seen
    assert pre["instance"].jti == minted.claims.jti and pre["instance"].pk is None
    assert (pre["raw"], pre["using"], pre["update_fields"]) == (False, "default", None)
    assert post["created"] is True and (post["raw"], post["using"]) == (False, "default")
    assert Pause.objects.get(pk=post["instance"].pk).jti == minted.claims.jti


def test_the_returned_row_is_saved_so_saving_it_again_updates_it() -> None:
    saved = insert_pause(unsaved(3, None), using="default")
    saved.name = "renamed"
    saved.save(update_fields=["name"])  # an unsaved instance would refuse update_fields
    assert Pause.objects.get(pk=saved.pk).name == "renamed"
    assert Pause.objects.count() == 1


def test_without_returning_the_key_is_read_as_django_reads_it(
    monkeypatch: pytest.MonkeyPatch, fresh_statement: None
) -> None:
    if connection.vendor == "postgresql":
        pytest.skip("PostgreSQL always returns the key (Django reads no last insert id there)")
    connection.ensure_connection()
    monkeypatch.setattr(connection.features, "can_return_columns_from_insert", False)
    assert "RETURNING" not in insert_statement("default").sql
    first = insert_pause(unsaved(4, None), using="default")
    second = insert_pause(unsaved(5, None), using="default")
    assert second.pk != first.pk
    assert Pause.objects.get(pk=first.pk).thread_id == "thread-4"
    assert Pause.objects.get(pk=second.pk).thread_id == "thread-5"
