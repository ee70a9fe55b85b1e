"""Settings the test suite runs under. The database comes from DATABASE_URL (SQLite when unset)."""

from __future__ import annotations

import json
import os
import tempfile
from importlib.util import find_spec
from typing import Any

import dj_database_url
import django

SECRET_KEY = "turnstate-tests-only"
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
ROOT_URLCONF = "tests.urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",  # the live server serves the admin's CSS to the browser test
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "turnstate_app",
    "turnstate_app.contrib.langgraph",
    "turnstate_app.contrib.pydantic_ai",
    "turnstate_app.contrib.openai_agents",
    "turnstate_app.contrib.google_adk",
    # turnstate_app.tasks on django-tasks-db's worker (tests/contrib/test_continue_pause.py); the
    # tasks API is Django 6's own, or the django-tasks backport on 5.2.
    *(["django_tasks"] if find_spec("django.tasks") is None and find_spec("django_tasks") else []),
    *(["django_tasks_db"] if find_spec("django_tasks_db") else []),
]

MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]


def database_from_env() -> dict[str, Any]:
    """The database named by DATABASE_URL, tuned the way the README recommends."""
    default = "sqlite:///" + os.path.join(tempfile.gettempdir(), "turnstate.sqlite3")
    url = os.environ.get("DATABASE_URL") or default
    db: dict[str, Any] = dict(dj_database_url.parse(url))
    engine = db["ENGINE"]
    if engine.endswith("sqlite3"):
        # File-backed, so spawned processes in the tests share it with the parent.
        db["TEST"] = {"NAME": os.path.join(tempfile.gettempdir(), f"turnstate_test_{os.getpid()}.sqlite3")}
        db["OPTIONS"] = {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    elif engine.endswith("mysql"):
        db["OPTIONS"] = {"charset": "utf8mb4"}
        db["TEST"] = {"CHARSET": "utf8mb4", "COLLATION": "utf8mb4_unicode_ci"}
    # Extra driver OPTIONS as JSON, e.g. Django's PostgreSQL pool: DATABASE_OPTIONS='{"pool": true}'.
    db["OPTIONS"] = {**db.get("OPTIONS", {}), **json.loads(os.environ.get("DATABASE_OPTIONS") or "{}")}
    # Persistent connections, e.g. DATABASE_CONN_MAX_AGE=60 ("None": unlimited); Django's default is 0.
    if os.environ.get("DATABASE_CONN_MAX_AGE"):
        age = os.environ["DATABASE_CONN_MAX_AGE"]
        db["CONN_MAX_AGE"] = None if age == "None" else int(age)
    if not engine.endswith("sqlite3"):
        # A suffix lets two runs share one server without sharing a test database.
        db.setdefault("TEST", {})["NAME"] = "test_turnstate" + os.environ.get("TEST_DB_SUFFIX", "")
    return db


def replica_of(primary: dict[str, Any]) -> dict[str, Any]:
    """A second, separate database on the same server: an always-empty "replica" for router tests."""
    replica = {**primary, "TEST": {**primary.get("TEST", {})}}
    if primary["ENGINE"].endswith("sqlite3"):
        replica["NAME"] = primary["NAME"] + "-replica"
        replica["TEST"]["NAME"] = primary["TEST"]["NAME"].replace(".sqlite3", "-replica.sqlite3")
    else:
        replica["TEST"]["NAME"] = primary["TEST"]["NAME"] + "_replica"
    return replica


DATABASES = {"default": database_from_env()}
DATABASES["replica"] = replica_of(DATABASES["default"])

STATIC_URL = "/static/"

# Django 6.1 sends mail through MAILERS and warns on every send of a project without them (Django
# 2028 has no default mailer); the test runner swaps each one for its in-memory outbox.
if django.VERSION >= (6, 1):
    MAILERS = {"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}}

# What drf-spectacular asks of every project serving a schema; nothing else is set, so the
# app's views run under DRF's defaults, as in a host that configured nothing.
REST_FRAMEWORK = {"DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema"}
