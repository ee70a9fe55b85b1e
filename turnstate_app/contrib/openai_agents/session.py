"""``DjangoSession``: the OpenAI Agents SDK's ``Session`` on Django's database.

Every call gives what the SDK's ``SQLiteSession`` gives for the same sequence (the tests
compare them call by call): items in the order added, ``get_items(limit)`` the latest N in
order (``session_settings.limit`` when no limit is given; 0 none, a negative limit all),
``pop_item`` the newest. ``pop_item`` is atomic across processes without a lock: it reads the
newest row and deletes it by primary key; only the caller whose ``DELETE`` removed the row
returns it, the others move on to an older one, so each item is popped once.

The SDK awaits each call; each is one hop onto Django's thread-sensitive executor. Sync code
calls the ``*_sync`` forms, on its own connection and inside its own transaction. A row that
does not read back (failing its MAC, not JSON, or not decrypting: its session's key is gone) is
refused (``UnreadableSessionItemError``) and kept, never skipped.

With keys configured each item is encrypted with the keys of the session id (the thread of the
pauses of a run on this session), its key id written in the same ``INSERT``; sealed or clear,
each item carries a MAC naming its session (:mod:`~turnstate_app.contrib.openai_agents.codec`).
"""

from __future__ import annotations

from typing import Any

from agents.memory.session import SessionABC
from agents.memory.session_settings import SessionSettings, resolve_session_limit
from asgiref.sync import sync_to_async
from django.db import connections, router, transaction
from django.utils import timezone

from turnstate_app.contrib.openai_agents import statements
from turnstate_app.contrib.openai_agents.codec import decode_item, encode_item
from turnstate_app.contrib.openai_agents.models import StoredSessionItem
from turnstate_app.ports.limits import require_id


def check_id(field: str, value: Any) -> str:
    """``value``, once the core's id rule (:func:`~turnstate_app.ports.limits.require_id`) accepts it."""
    require_id(field, value)
    return str(value)


class DjangoSession(SessionABC):
    """A conversation's items in one table (app ``turnstate_app.contrib.openai_agents``)."""

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        *,
        using: str | None = None,
        session_settings: SessionSettings | None = None,
    ) -> None:
        self.session_id = check_id("session_id", session_id)
        self.using = using
        self.session_settings = session_settings if session_settings is not None else SessionSettings()

    @property
    def alias(self) -> str:
        """The primary unless ``using`` names a database: a lagging replica would pop an item twice."""
        return self.using or router.db_for_write(StoredSessionItem)

    def _rows(self) -> Any:
        return StoredSessionItem.objects.using(self.alias).filter(session_id=self.session_id)

    # -- sync code ------------------------------------------------------------------------

    def get_items_sync(self, limit: int | None = None) -> list[Any]:
        """:meth:`get_items` for sync code: one ``SELECT``."""
        limit = resolve_session_limit(limit, self.session_settings)
        if limit == 0:
            return []
        alias = self.alias
        latest = limit is not None and limit > 0
        params: list[Any] = [self.session_id, limit] if latest else [self.session_id]
        with connections[alias].cursor() as cursor:
            cursor.execute(statements.select_items(alias, latest=latest), params)
            stored = list(cursor.fetchall())  # a tuple on MySQLdb
        if latest:
            stored.reverse()
        return [decode_item(value, key_id, mac, session_id=self.session_id) for value, key_id, mac in stored]

    def add_items_sync(self, items: list[Any]) -> None:
        """:meth:`add_items` for sync code: one multi-row ``INSERT`` (per 500 items), in one transaction."""
        if not items:
            return
        alias = self.alias
        connection = connections[alias]
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        width = len(statements.ITEM_COLUMNS)
        values = [
            v
            for item in items
            for v in (self.session_id, *encode_item(item, session_id=self.session_id), now)
        ]  # all, before a write
        step = statements.ITEMS_PER_INSERT
        with transaction.atomic(using=alias), connection.cursor() as cursor:
            for start in range(0, len(items), step):
                part = values[width * start : width * (start + step)]
                cursor.execute(statements.insert_items(alias, len(part) // width), part)

    def pop_item_sync(self) -> Any:
        """:meth:`pop_item` for sync code."""
        rows = self._rows()
        older = rows
        while True:
            newest = older.order_by("-pk").values_list("pk", "item", "encryption_key_id", "value_mac").first()
            if newest is None:
                return None
            pk, stored, key_id, mac = newest
            item = decode_item(stored, key_id, mac, session_id=self.session_id)  # unreadable: kept, refused
            if rows.filter(pk=pk).delete()[0] == 1:
                return item
            # Another caller popped it: the next older row, never this one again (a repeatable-read
            # snapshot inside the caller's transaction would keep showing it).
            older = rows.filter(pk__lt=pk)

    def clear_session_sync(self) -> None:
        """:meth:`clear_session` for sync code."""
        self._rows().delete()

    # -- the SDK's Session ----------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[Any]:
        items: list[Any] = await sync_to_async(self.get_items_sync, thread_sensitive=True)(limit)
        return items

    async def add_items(self, items: list[Any]) -> None:
        await sync_to_async(self.add_items_sync, thread_sensitive=True)(items)

    async def pop_item(self) -> Any:
        return await sync_to_async(self.pop_item_sync, thread_sensitive=True)()

    async def clear_session(self) -> None:
        await sync_to_async(self.clear_session_sync, thread_sensitive=True)()
