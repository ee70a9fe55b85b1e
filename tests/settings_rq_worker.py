"""Settings of the processes that hand answers to a queue and continue them, in
``tests/test_queue_workers.py`` and ``bench/soak_workers.py``: the web server, ``rqworker`` and
``db_worker``.

The database is the one named by ``DATABASE_URL`` with the name ``TURNSTATE_WORKER_DB`` (the
parent's test database); the queue is RQ on the Redis at ``TURNSTATE_REDIS_URL``, or
django-tasks-db's when ``TURNSTATE_QUEUE=db``. ``AGENTS`` names the ``pay`` graph of
``tests.after_answer_support``, and ``STALLED_AFTER`` (``TURNSTATE_STALLED_AFTER``, one second
unless set) is the one the parent uses: a released run takes over its thread's turn from a killed
worker once that turn is older than ``STALLED_AFTER``, so every process must agree on it.
"""

from __future__ import annotations

import os
from typing import Any

from tests.settings import *  # noqa: F403
from tests.settings import DATABASES, INSTALLED_APPS

ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
DATABASES = {"default": {**DATABASES["default"], "NAME": os.environ["TURNSTATE_WORKER_DB"]}}
INSTALLED_APPS = [*INSTALLED_APPS, "django_rq"]
RQ_QUEUES = {"default": {"URL": os.environ.get("TURNSTATE_REDIS_URL", "redis://127.0.0.1:6379/0")}}
TASKS = {
    "default": {
        "BACKEND": "django_tasks_db.DatabaseBackend"
        if os.environ.get("TURNSTATE_QUEUE") == "db"
        else "django_tasks_rq.RQBackend"
    }
}
TURNSTATE: dict[str, Any] = {
    "AGENTS": {"after-answer-pay": "tests.after_answer_support.pay"},
    "RESUME_HANDLER": "turnstate_app.handoff.enqueue_continuation",
    "STALLED_AFTER": int(os.environ.get("TURNSTATE_STALLED_AFTER", "1")),
}
