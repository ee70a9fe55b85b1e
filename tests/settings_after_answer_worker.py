"""The task worker of ``tests/test_after_answer_faults.py``: the parent's test database (its name in
``TURNSTATE_WORKER_DB``), django-tasks-db's backend, the ``pay`` graph in ``AGENTS`` and
``STALLED_AFTER`` of one second, as the test sets it in its own process."""

from __future__ import annotations

import os
from typing import Any

from tests.settings import *  # noqa: F403
from tests.settings import DATABASES

DATABASES = {"default": {**DATABASES["default"], "NAME": os.environ["TURNSTATE_WORKER_DB"]}}
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
TURNSTATE: dict[str, Any] = {
    "AGENTS": {"after-answer-pay": "tests.after_answer_support.pay"},
    "STALLED_AFTER": 1,
}
