"""Every statement on every connection of any thread, while watched: LangGraph writes on its own threads."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connections
from django.db.backends.signals import connection_created

from turnstate_app.contrib.langgraph.connections import release_saver_connections


class SeenStatements:
    """An ``execute_wrapper`` on every connection: each statement's SQL, under the label current then."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        self.label = ""

    def __call__(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        with self.lock:
            self.seen.append((self.label, sql))
        return execute(sql, params, many, context)

    @property
    def sql(self) -> list[str]:
        return [sql for _, sql in self.seen]

    @property
    def counts(self) -> Counter[str]:
        return Counter(label for label, _ in self.seen)

    def attach(self, connection: Any, **_: Any) -> None:
        if self not in connection.execute_wrappers:
            connection.execute_wrappers.append(self)

    @contextmanager
    def counting(self, label: str) -> Iterator[None]:
        self.label = label
        yield
        self.label = ""


@contextmanager
def watching() -> Iterator[SeenStatements]:
    """Watch every connection, those opened meanwhile and the saver connection (closed first, so it
    opens again under watch) included."""
    release_saver_connections()
    seen = SeenStatements()
    connection_created.connect(seen.attach)
    for opened in connections.all(initialized_only=True):
        seen.attach(opened)
    try:
        yield seen
    finally:
        connection_created.disconnect(seen.attach)
        release_saver_connections()
        for opened in connections.all(initialized_only=True):
            if seen in opened.execute_wrappers:
                opened.execute_wrappers.remove(seen)
