"""Which of CI's legs a test runs on.

A test that never reaches the database (a subprocess printing ``--help``, a collection, a build)
proves the same thing on every database; it runs on the SQLite legs (Django 5.2 and 6) and is
skipped on PostgreSQL and MariaDB, where it would only repeat itself.
"""

from __future__ import annotations

import pytest
from django.db import connection

SQLITE_LEGS_ONLY = pytest.mark.skipif(
    connection.vendor != "sqlite", reason="database-independent: runs on the SQLite legs only"
)
