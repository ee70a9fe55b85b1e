"""The core's erasure and purge reach the ADK sessions of a thread (a pause's thread is its session id)."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from tests.contrib.google_adk.test_session import T0, event
from tests.pause_helpers import age, answered, mint
from turnstate_app.contrib.google_adk import DjangoSessionService
from turnstate_app.contrib.google_adk.models import (
    StoredAppState,
    StoredEvent,
    StoredSession,
    StoredUserState,
)
from turnstate_app.retention import erase_thread

pytestmark = pytest.mark.django_db


def stored(service: DjangoSessionService, session_id: str, *, app: str = "app", user: str = "ann") -> None:
    """A session with an event and state of every scope."""
    ids: dict[str, Any] = {"app_name": app, "user_id": user, "session_id": session_id}
    session = service.create_session_sync(**ids, state={"k": 1, "app:a": 1, "user:u": 1}, now=T0)
    service.store_event_sync(session, event(1, {"k": 2}))


def rows(session_id: str) -> int:
    """Sessions and events stored under this session id."""
    return (
        StoredSession.objects.filter(session_id=session_id).count()
        + StoredEvent.objects.filter(session__session_id=session_id).count()
    )


def test_erase_thread_deletes_the_sessions_of_that_id_and_their_events() -> None:
    service = DjangoSessionService()
    stored(service, "thread-1")
    stored(service, "thread-1", app="other-app", user="bob")
    stored(service, "thread-2")
    mint(1)

    erase_thread("thread-1")

    assert rows("thread-1") == 0
    assert rows("thread-2") == 2
    assert service.get_session_sync(app_name="app", user_id="ann", session_id="thread-1") is None
    assert StoredAppState.objects.filter(app_name="app").exists()  # an app's and a user's state are no
    assert StoredUserState.objects.filter(app_name="app", user_id="ann").exists()  # session's to erase


def test_turnstate_purge_thread_erases_the_session() -> None:
    stored(DjangoSessionService(), "thread-7")
    call_command("turnstate_purge", "--thread", "thread-7", stdout=StringIO())
    assert rows("thread-7") == 0


def test_age_purge_erases_sessions_left_without_pauses() -> None:
    service = DjangoSessionService()
    age(answered(1), 40)
    age(answered(2), 40)
    mint(3, thread_id="thread-2")  # a live pause on the same session as pause 2
    for thread in ("thread-1", "thread-2", "thread-9"):
        stored(service, thread)

    call_command("turnstate_purge", "--older-than", "30", stdout=StringIO())

    assert rows("thread-1") == 0
    assert rows("thread-2") == 2  # its pending pause must stay continuable
    assert rows("thread-9") == 2  # never paused: not the ledger's to purge
