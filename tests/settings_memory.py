"""The suite's settings with Django's default test database on SQLite: in memory, shared cache.

What a host project gets when its ``DATABASES`` names a SQLite file and sets no ``TEST``
name: every thread's connection opens ``file:memorydb_default?mode=memory&cache=shared``,
where a lock held by one connection fails another at once ("database table is locked"; no
busy timeout applies). ``make test-sqlite-memory`` runs the LangGraph bridge tests on it.
"""

from __future__ import annotations

import os
import tempfile

from tests.settings import *  # noqa: F403

_here = os.path.join(tempfile.gettempdir(), "turnstate-memory")
DATABASES = {
    "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": _here + ".sqlite3"},
    "replica": {"ENGINE": "django.db.backends.sqlite3", "NAME": _here + "-replica.sqlite3"},
}
