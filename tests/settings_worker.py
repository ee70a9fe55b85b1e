"""A task worker's settings in the tests: the parent's test database, django-tasks-db's backend.

The parent test passes its test database's name in ``TURNSTATE_WORKER_DB``, so ``manage.py
db_worker`` in a child process works on the rows the test enqueued.
"""

from __future__ import annotations

import os

from tests.settings import *  # noqa: F403
from tests.settings import DATABASES

DATABASES = {"default": {**DATABASES["default"], "NAME": os.environ["TURNSTATE_WORKER_DB"]}}
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
TURNSTATE = {
    "AGENTS": {
        "task-trip": "tests.contrib.registered.trip",
        "travel": "tests.contrib.registered.travel",
        "payments": "tests.contrib.registered.payments",
    }
}
