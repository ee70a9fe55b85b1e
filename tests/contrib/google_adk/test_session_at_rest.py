"""What the session tables hold at rest: sealed values, bound to their rows, re-sealed by rotation.

Someone who can write the database but holds no key edits a row of each table behind every API
(one raw ``UPDATE`` through Django's cursor): a clear value planted where a sealed one was written,
the key id cleared, the MAC changed, or another row's value, key id and MAC copied in whole. Each
is refused on read with the core's ``ChangedAtRestError``, never read as data.
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.core.management import call_command
from django.db.models import Model

from tests.contrib.google_adk.test_session import T0, event
from tests.contrib.raw_edits import raw_update
from tests.encryption_support import KEY_A, KEY_B, SECRET
from turnstate_app.contrib.google_adk import DjangoSessionService
from turnstate_app.contrib.google_adk.models import (
    StoredAppState,
    StoredEvent,
    StoredSession,
    StoredUserState,
)
from turnstate_app.encryption import key_id_of
from turnstate_app.errors import ChangedAtRestError, UnreadableValueError

pytestmark = pytest.mark.django_db

TABLES: dict[str, tuple[type[Model], str]] = {
    "session": (StoredSession, "state"),
    "event": (StoredEvent, "event"),
    "app state": (StoredAppState, "state"),
    "user state": (StoredUserState, "state"),
}


def populate(service: DjangoSessionService, app: str, session_id: str = "s1") -> dict[str, Any]:
    """A session whose every scope, and one event, hold the secret; the ids to read it by."""
    ids: dict[str, Any] = {"app_name": app, "user_id": "ann", "session_id": session_id}
    state = {"note": SECRET, "app:note": SECRET, "user:note": SECRET}
    session = service.create_session_sync(**ids, state=state, now=T0)
    service.store_event_sync(session, event(1, {"seen": SECRET}, invocation_id=f"inv-{session_id}"))
    return ids


def row_of(table: str, app: str, session_id: str = "s1") -> Any:
    model, _value = TABLES[table]
    if model is StoredEvent:
        return StoredEvent.objects.get(session__app_name=app, session__session_id=session_id)
    if model is StoredSession:
        return StoredSession.objects.get(app_name=app, session_id=session_id)
    return model._default_manager.get(app_name=app)


def read_everything(service: DjangoSessionService, ids: dict[str, Any]) -> None:
    """Every read that goes through all four tables."""
    service.get_session_sync(**ids)
    service.list_sessions_sync(app_name=ids["app_name"])
    service.get_user_state_sync(app_name=ids["app_name"], user_id=ids["user_id"])


@pytest.fixture
def keyed(turnstate_settings: dict[str, Any]) -> dict[str, Any]:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    return turnstate_settings


def fresh_app() -> str:
    return f"app-{uuid.uuid4().hex[:8]}"


def test_sealed_values_are_not_readable_in_the_tables_and_read_back_whole(keyed: dict[str, Any]) -> None:
    service, app = DjangoSessionService(), fresh_app()
    ids = populate(service, app)
    for table, (_model, value) in TABLES.items():
        row = row_of(table, app)
        assert SECRET not in getattr(row, value), table
        assert row.encryption_key_id == key_id_of(KEY_A) and row.value_mac, table
    session = service.get_session_sync(**ids)
    assert session is not None
    assert {session.state[k] for k in ("note", "app:note", "user:note")} == {SECRET}
    assert session.events[0].actions.state_delta == {"seen": SECRET}
    assert service.get_user_state_sync(app_name=app, user_id="ann") == {"note": SECRET}


def plant_clear(row: Any, value: str) -> None:
    """The value as it would be stored clear (the JSON the row's value is), key id NULL, MAC kept."""
    model = type(row)
    clear = json.dumps({"note": "planted"}) if value == "state" else json.dumps({"id": "e1", "author": "x"})
    raw_update(model, row.pk, value, clear)
    raw_update(model, row.pk, "encryption_key_id", None)


def clear_key_id(row: Any, value: str) -> None:
    raw_update(type(row), row.pk, "encryption_key_id", None)


def change_mac(row: Any, value: str) -> None:
    mac = row.value_mac
    raw_update(type(row), row.pk, "value_mac", ("0" if mac[0] != "0" else "1") + mac[1:])


EDITS: dict[str, Callable[[Any, str], None]] = {
    "clear value planted": plant_clear,
    "key id cleared": clear_key_id,
    "MAC changed": change_mac,
}


@pytest.mark.parametrize("edit", list(EDITS))
@pytest.mark.parametrize("table", list(TABLES))
def test_a_row_edited_at_rest_is_refused_on_read(keyed: dict[str, Any], table: str, edit: str) -> None:
    service, app = DjangoSessionService(), fresh_app()
    ids = populate(service, app)
    read_everything(service, ids)  # reads whole before the edit
    EDITS[edit](row_of(table, app), TABLES[table][1])
    with pytest.raises(ChangedAtRestError) as refused:
        read_everything(service, ids)
    assert SECRET not in str(refused.value) and "planted" not in str(refused.value)


@pytest.mark.parametrize("table", ["session", "event"])
def test_a_value_copied_from_another_session_is_refused(keyed: dict[str, Any], table: str) -> None:
    """Value, key id and MAC moved whole from one session's row to another's: the MAC names its row."""
    service, app = DjangoSessionService(), fresh_app()
    ids = populate(service, app, "s1")
    populate(service, app, "s2")
    target, source = row_of(table, app, "s1"), row_of(table, app, "s2")
    value = TABLES[table][1]
    for column in (value, "encryption_key_id", "value_mac"):
        raw_update(type(target), target.pk, column, getattr(source, column))
    with pytest.raises(ChangedAtRestError):
        service.get_session_sync(**ids)


def test_a_clear_value_edited_at_rest_is_refused_too() -> None:
    """Without keys values are stored clear, and still bound to their rows by the MAC."""
    service, app = DjangoSessionService(), fresh_app()
    ids = populate(service, app)
    row = row_of("session", app)
    assert row.encryption_key_id is None and SECRET in row.state
    raw_update(StoredSession, row.pk, "state", row.state.replace(SECRET, "edited"))
    with pytest.raises(ChangedAtRestError):
        service.get_session_sync(**ids)


def test_rotation_re_seals_every_table_and_the_old_key_can_go(turnstate_settings: dict[str, Any]) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    service, app = DjangoSessionService(), fresh_app()
    ids = populate(service, app)
    before = {table: row_of(table, app) for table in TABLES}
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_B, KEY_A]
    call_command("turnstate_rotate_keys", stdout=io.StringIO())
    for table, (_model, value) in TABLES.items():
        after = row_of(table, app)
        assert after.encryption_key_id == key_id_of(KEY_B), table
        assert getattr(after, value) != getattr(before[table], value) and SECRET not in getattr(after, value)
        assert after.value_mac != before[table].value_mac, table
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_B]
    session = service.get_session_sync(**ids)
    assert session is not None and session.state["user:note"] == SECRET
    assert session.events[0].actions.state_delta == {"seen": SECRET}


def test_a_value_whose_key_is_gone_is_an_unreadable_record(turnstate_settings: dict[str, Any]) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    service, app = DjangoSessionService(), fresh_app()
    ids = populate(service, app)
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_B]
    with pytest.raises(UnreadableValueError) as refused:
        service.get_session_sync(**ids)
    assert not isinstance(refused.value, ChangedAtRestError) and SECRET not in str(refused.value)
