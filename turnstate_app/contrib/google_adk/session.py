"""``DjangoSessionService``: Google ADK's session service on Django's database.

Every call gives what ADK's ``DatabaseSessionService`` gives for the same sequence (the tests
compare them, and ``InMemorySessionService``, call by call): state split into app, user and
session scopes (``temp:`` keys reach the session object, never the database), partial events not
stored, events in time order, ``get_session``'s ``num_recent_events`` and ``after_timestamp``,
sessions listed oldest update first, a duplicate id refused with ADK's ``AlreadyExistsError``.

An append is refused with ADK's ``StaleSessionError`` when the stored session moved on since the
caller's copy was read: its stored revision (the last event's timestamp, to the microsecond) is
not the copy's ``last_update_time`` and the event stored last is not the copy's last one. The
session row is locked (``SELECT ... FOR UPDATE``; SQLite writes one at a time) for the check and
the write, so two processes appending to one copy store one event, never both.

Each call is one hop onto Django's thread-sensitive executor and a few statements, in one
transaction where it writes: an append is a locked read of the session, its ``UPDATE`` and the
event's ``INSERT`` (plus a read and a write per app or user scope its delta touches); a read is a
statement for the session with its app and user state, and one for its events. Sync code calls
the ``*_sync`` forms. Values are sealed at rest by :mod:`~turnstate_app.contrib.google_adk.codec`;
a row changed at rest is refused (``ChangedAtRestError``), never skipped.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import IntegrityError, router, transaction
from django.db.models import OuterRef, QuerySet, Subquery, Value
from django.utils import timezone
from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.platform import time as platform_time
from google.adk.platform import uuid as platform_uuid
from google.adk.sessions import BaseSessionService, Session
from google.adk.sessions.base_session_service import GetSessionConfig, ListSessionsResponse
from typing_extensions import override

from turnstate_app.contrib.google_adk.codec import (
    APP_STATE,
    EVENT,
    SESSION,
    USER_STATE,
    Sealed,
    decode,
    encode,
)
from turnstate_app.contrib.google_adk.models import (
    NAME_MAX_LENGTH,
    StoredAppState,
    StoredEvent,
    StoredSession,
    StoredUserState,
)
from turnstate_app.contrib.google_adk.state_scopes import Scopes, merged, split
from turnstate_app.errors import CheckpointFieldError
from turnstate_app.ports.limits import require_id

STALE = (
    "The session has been modified in storage since it was loaded. "
    "Please reload the session before appending more events."
)  # ADK's own words (DatabaseSessionService)
SESSION_VALUES = ("state", "encryption_key_id", "value_mac")
EVENT_VALUES = ("event_id", "invocation_id", "event", "encryption_key_id", "value_mac")


def check_name(field: str, value: Any) -> str:
    """An app name or user id: the core's id rule, at most ADK's 128 characters."""
    require_id(field, value)
    if len(value) > NAME_MAX_LENGTH:
        raise CheckpointFieldError(field, f"is {len(value)} characters long; the limit is {NAME_MAX_LENGTH}")
    return str(value)


def to_column(seconds: float) -> datetime:
    """A POSIX time as a ``DateTimeField`` holds it (microseconds; naive UTC without ``USE_TZ``)."""
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment if settings.USE_TZ else moment.replace(tzinfo=None)


def from_column(moment: datetime) -> float:
    """The POSIX time of a stored moment: exactly what :func:`to_column` was given, to the microsecond."""
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def scoped(prefix: str, rows: QuerySet[Any]) -> dict[str, Subquery]:
    """A scope's stored value, key id and MAC as annotations (``<prefix>_state`` ...) of a session row."""
    return {f"{prefix}_{name}": Subquery(rows.values(name)[:1]) for name in SESSION_VALUES}


def scoped_columns(prefix: str) -> tuple[str, ...]:
    return tuple(f"{prefix}_{name}" for name in SESSION_VALUES)


class DjangoSessionService(BaseSessionService):
    """ADK sessions, their events, app and user state in four tables (app ``turnstate_google_adk``)."""

    def __init__(self, *, using: str | None = None) -> None:
        self.using = using

    @property
    def alias(self) -> str:
        """The primary unless ``using`` names a database: a lagging replica would let a stale append in."""
        return self.using or router.db_for_write(StoredSession)

    # -- reading a scope ------------------------------------------------------------------

    def _scope(
        self, kind: Sealed, found: tuple[Any, ...], *, thread: str, identity: tuple[str, ...]
    ) -> dict[str, Any]:
        """A stored state (a session's, an app's, a user's); ``{}`` where the row is absent."""
        stored, key_id, mac = found
        if stored is None:
            return {}
        state: dict[str, Any] = decode(kind, stored, key_id, mac, thread=thread, identity=identity)
        return state

    def _merge(
        self,
        rows: QuerySet[Any],
        kind: Sealed,
        delta: dict[str, Any],
        *,
        thread: str,
        identity: tuple[str, ...],
    ) -> dict[str, Any]:
        """Apply ``delta`` to a scope's row (locked; created on its first delta) and return its state."""
        columns = ("pk", *SESSION_VALUES)
        found = rows.select_for_update().values_list(*columns).first()
        if found is None:
            state = dict(delta)
            stored, key_id, mac = encode(kind, state, thread=thread, identity=identity)
            try:
                # A savepoint: a concurrent first write of this scope may win, then this one merges into it.
                with transaction.atomic(using=rows.db):
                    rows.create(
                        **dict(zip(kind.identity, identity, strict=True)),
                        state=stored,
                        encryption_key_id=key_id,
                        value_mac=mac,
                    )
            except IntegrityError:
                found = rows.select_for_update().values_list(*columns).first()
                if found is None:
                    raise
            else:
                return state
        pk, *values = found
        state = self._scope(kind, tuple(values), thread=thread, identity=identity)
        state.update(delta)
        stored, key_id, mac = encode(kind, state, thread=thread, identity=identity)
        rows.filter(pk=pk).update(
            state=stored, encryption_key_id=key_id, value_mac=mac, updated_at=timezone.now()
        )
        return state

    def _app_rows(self, alias: str, app_name: str) -> QuerySet[StoredAppState]:
        return StoredAppState.objects.using(alias).filter(app_name=app_name)

    def _user_rows(self, alias: str, app_name: str, user_id: str) -> QuerySet[StoredUserState]:
        return StoredUserState.objects.using(alias).filter(app_name=app_name, user_id=user_id)

    def _write_scopes(
        self, alias: str, app_name: str, user_id: str, scopes: Scopes
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The app and user state once ``scopes``' deltas are applied (None: a scope with no delta)."""
        app = user = None
        if scopes.app:
            app = self._merge(
                self._app_rows(alias, app_name), APP_STATE, scopes.app, thread=app_name, identity=(app_name,)
            )
        if scopes.user:
            user = self._merge(
                self._user_rows(alias, app_name, user_id),
                USER_STATE,
                scopes.user,
                thread=user_id,
                identity=(app_name, user_id),
            )
        return app, user

    def _read_scopes(self, alias: str, app_name: str, user_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """The app and user state, in one statement."""
        app = (
            self._app_rows(alias, app_name).annotate(scope=Value("app")).values_list("scope", *SESSION_VALUES)
        )
        user = (
            self._user_rows(alias, app_name, user_id)
            .annotate(scope=Value("user"))
            .values_list("scope", *SESSION_VALUES)
        )
        states: dict[str, dict[str, Any]] = {"app": {}, "user": {}}
        for scope, *found in app.union(user, all=True):
            if scope == "app":
                states["app"] = self._scope(APP_STATE, tuple(found), thread=app_name, identity=(app_name,))
            else:
                states["user"] = self._scope(
                    USER_STATE, tuple(found), thread=user_id, identity=(app_name, user_id)
                )
        return states["app"], states["user"]

    # -- sync code ------------------------------------------------------------------------

    def create_session_sync(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
        now: float | None = None,
    ) -> Session:
        """:meth:`create_session` for sync code: the INSERT, then its scopes, in one transaction."""
        check_name("app_name", app_name)
        check_name("user_id", user_id)
        session_id = session_id if session_id else platform_uuid.new_uuid()
        require_id("session_id", session_id)
        identity = (app_name, user_id, session_id)
        scopes = split(state)
        moment = to_column(platform_time.get_time() if now is None else now)
        stored, key_id, mac = encode(SESSION, scopes.session, thread=session_id, identity=identity)
        alias = self.alias
        inserted = False
        try:
            with transaction.atomic(using=alias):
                StoredSession.objects.using(alias).create(
                    app_name=app_name,
                    user_id=user_id,
                    session_id=session_id,
                    state=stored,
                    encryption_key_id=key_id,
                    value_mac=mac,
                    created_at=moment,
                    updated_at=moment,
                )
                inserted = True
                app, user = self._write_scopes(alias, app_name, user_id, scopes)
                if app is None or user is None:
                    read_app, read_user = self._read_scopes(alias, app_name, user_id)
                    app, user = read_app if app is None else app, read_user if user is None else user
        except IntegrityError:
            if inserted:
                raise
            raise AlreadyExistsError(f"Session with id {session_id} already exists.") from None
        return Session(
            id=session_id,
            app_name=app_name,
            user_id=user_id,
            state=merged(app, user, scopes.session),
            last_update_time=from_column(moment),
        )

    def get_session_sync(
        self, *, app_name: str, user_id: str, session_id: str, config: GetSessionConfig | None = None
    ) -> Session | None:
        """:meth:`get_session` for sync code: the session with its scopes, then its events (two SELECTs)."""
        alias = self.alias
        app = StoredAppState.objects.using(alias).filter(app_name=OuterRef("app_name"))
        user = StoredUserState.objects.using(alias).filter(
            app_name=OuterRef("app_name"), user_id=OuterRef("user_id")
        )
        row = (
            StoredSession.objects.using(alias)
            .filter(app_name=app_name, user_id=user_id, session_id=session_id)
            .annotate(**scoped("app", app), **scoped("user", user))
            .values_list("pk", "updated_at", *SESSION_VALUES, *scoped_columns("app"), *scoped_columns("user"))
            .first()
        )
        if row is None:
            return None
        pk, updated_at = row[0], row[1]
        identity = (app_name, user_id, session_id)
        own = self._scope(SESSION, row[2:5], thread=session_id, identity=identity)
        app_state = self._scope(APP_STATE, row[5:8], thread=app_name, identity=(app_name,))
        user_state = self._scope(USER_STATE, row[8:11], thread=user_id, identity=(app_name, user_id))
        return Session(
            id=session_id,
            app_name=app_name,
            user_id=user_id,
            state=merged(app_state, user_state, own),
            events=self._events(alias, pk, identity, config),
            last_update_time=from_column(updated_at),
        )

    def _events(
        self, alias: str, pk: int, identity: tuple[str, str, str], config: GetSessionConfig | None
    ) -> list[Event]:
        limit = config.num_recent_events if config else None
        if limit == 0:
            return []
        rows = StoredEvent.objects.using(alias).filter(session_id=pk)
        if config and config.after_timestamp:
            rows = rows.filter(timestamp__gte=to_column(config.after_timestamp))
        if limit is None:
            found = list(rows.order_by("timestamp", "id").values_list(*EVENT_VALUES))
        else:
            found = list(rows.order_by("-timestamp", "-id").values_list(*EVENT_VALUES)[:limit])
            found.reverse()
        return [self._event(row, identity) for row in found]

    def _event(self, row: tuple[Any, ...], identity: tuple[str, str, str]) -> Event:
        event_id, invocation_id, stored, key_id, mac = row
        data = decode(EVENT, stored, key_id, mac, thread=identity[2], identity=(*identity, event_id))
        return Event.model_validate({**data, "id": event_id, "invocation_id": invocation_id})

    def list_sessions_sync(self, *, app_name: str, user_id: str | None = None) -> ListSessionsResponse:
        """:meth:`list_sessions` for sync code: the sessions with their users' state, then the app's."""
        alias = self.alias
        rows = StoredSession.objects.using(alias).filter(app_name=app_name)
        if user_id is not None:
            rows = rows.filter(user_id=user_id)
        user = StoredUserState.objects.using(alias).filter(
            app_name=OuterRef("app_name"), user_id=OuterRef("user_id")
        )
        found = list(
            rows.annotate(**scoped("user", user))
            .order_by("updated_at", "user_id", "session_id")
            .values_list("user_id", "session_id", "updated_at", *SESSION_VALUES, *scoped_columns("user"))
        )
        if not found:
            return ListSessionsResponse()
        app_row = self._app_rows(alias, app_name).values_list(*SESSION_VALUES).first()
        app_state = (
            {} if app_row is None else self._scope(APP_STATE, app_row, thread=app_name, identity=(app_name,))
        )
        users: dict[str, dict[str, Any]] = {}
        sessions = []
        for row in found:
            owner, session_id, updated_at = row[0], row[1], row[2]
            if owner not in users:
                users[owner] = self._scope(USER_STATE, row[6:9], thread=owner, identity=(app_name, owner))
            own = self._scope(SESSION, row[3:6], thread=session_id, identity=(app_name, owner, session_id))
            sessions.append(
                Session(
                    id=session_id,
                    app_name=app_name,
                    user_id=owner,
                    state=merged(app_state, users[owner], own),
                    last_update_time=from_column(updated_at),
                )
            )
        return ListSessionsResponse(sessions=sessions)

    def delete_session_sync(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """:meth:`delete_session` for sync code: the session and its events, in one transaction."""
        StoredSession.objects.using(self.alias).filter(
            app_name=app_name, user_id=user_id, session_id=session_id
        ).delete()

    def get_user_state_sync(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        """:meth:`get_user_state` for sync code: one ``SELECT``."""
        found = self._user_rows(self.alias, app_name, user_id).values_list(*SESSION_VALUES).first()
        if found is None:
            return {}
        return self._scope(USER_STATE, found, thread=user_id, identity=(app_name, user_id))

    def store_event_sync(self, session: Session, event: Event) -> float:
        """Store ``event`` (its ``temp:`` keys already trimmed) on ``session``'s row; the session's new
        ``last_update_time``. ``StaleSessionError`` when the stored session moved on since ``session``
        was read, ``SessionNotFoundError`` when it is gone; nothing is written then."""
        app_name, user_id, session_id = identity = (session.app_name, session.user_id, session.id)
        scopes = split(event.actions.state_delta if event.actions else None)
        alias = self.alias
        moment = to_column(event.timestamp)
        columns = ("pk", "updated_at", *(SESSION_VALUES if scopes.session else ()))
        with transaction.atomic(using=alias):
            rows = StoredSession.objects.using(alias).filter(
                app_name=app_name, user_id=user_id, session_id=session_id
            )
            found = rows.select_for_update().values_list(*columns).first()
            if found is None:
                raise SessionNotFoundError(f"Session {session_id} not found.")
            pk, updated_at = found[0], found[1]
            if from_column(updated_at) != session.last_update_time and not self._holds_last_event(
                alias, pk, session
            ):
                raise StaleSessionError(STALE)
            self._write_scopes(alias, app_name, user_id, scopes)
            changes: dict[str, Any] = {"updated_at": moment}
            if scopes.session:
                own = self._scope(SESSION, tuple(found[2:5]), thread=session_id, identity=identity)
                own.update(scopes.session)
                stored, key_id, mac = encode(SESSION, own, thread=session_id, identity=identity)
                changes.update(state=stored, encryption_key_id=key_id, value_mac=mac)
            StoredSession.objects.using(alias).filter(pk=pk).update(**changes)
            data = event.model_dump(exclude_none=True, mode="json")
            stored, key_id, mac = encode(EVENT, data, thread=session_id, identity=(*identity, event.id))
            StoredEvent.objects.using(alias).create(
                session_id=pk,
                event_id=event.id,
                invocation_id=event.invocation_id,
                timestamp=moment,
                event=stored,
                encryption_key_id=key_id,
                value_mac=mac,
            )
        return from_column(moment)

    def _holds_last_event(self, alias: str, pk: int, session: Session) -> bool:
        """Whether ``session``'s last event is the one stored last (both none: also true): a copy whose
        revision time is not the stored one is current exactly then, as ADK decides for a copy it did
        not read. Last stored, not latest in time: an event may carry an earlier timestamp."""
        newest = (
            StoredEvent.objects.using(alias)
            .filter(session_id=pk)
            .order_by("-id")
            .values_list("event_id", flat=True)
            .first()
        )
        return newest == (session.events[-1].id if session.events else None)

    # -- ADK's BaseSessionService ---------------------------------------------------------

    @override
    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        now = platform_time.get_time()  # read here: ADK's clock may be set per context
        created: Session = await sync_to_async(self.create_session_sync, thread_sensitive=True)(
            app_name=app_name, user_id=user_id, state=state, session_id=session_id, now=now
        )
        return created

    @override
    async def get_session(
        self, *, app_name: str, user_id: str, session_id: str, config: GetSessionConfig | None = None
    ) -> Session | None:
        found: Session | None = await sync_to_async(self.get_session_sync, thread_sensitive=True)(
            app_name=app_name, user_id=user_id, session_id=session_id, config=config
        )
        return found

    @override
    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> ListSessionsResponse:
        listed: ListSessionsResponse = await sync_to_async(self.list_sessions_sync, thread_sensitive=True)(
            app_name=app_name, user_id=user_id
        )
        return listed

    @override
    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        await sync_to_async(self.delete_session_sync, thread_sensitive=True)(
            app_name=app_name, user_id=user_id, session_id=session_id
        )

    @override
    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        state: dict[str, Any] = await sync_to_async(self.get_user_state_sync, thread_sensitive=True)(
            app_name=app_name, user_id=user_id
        )
        return state

    @override
    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        # As ADK's own services: temp: keys reach the session object for this invocation, never storage.
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        session.last_update_time = await sync_to_async(self.store_event_sync, thread_sensitive=True)(
            session, event
        )
        return self._commit_event_to_session(session, event)
