"""The example project: turnstate_app installed the way the README tells users to."""

from __future__ import annotations

import os
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import dj_database_url
import django

BASE_DIR = Path(__file__).resolve().parent.parent

# LangGraph's strict msgpack, set before LangGraph is imported (the apps load after the
# settings): each compiled graph then allows its own state types on load (turnstate.W003).
os.environ.setdefault("LANGGRAPH_STRICT_MSGPACK", "true")

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "example-project-not-for-production")
DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
USE_TZ = True
TIME_ZONE = "UTC"
ROOT_URLCONF = "example_project.urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    *(["django_tasks"] if django.VERSION < (6, 0) else []),  # the tasks API backport on 5.2
    "django_tasks_db",
    "turnstate_app",
    "turnstate_app.contrib.langgraph",  # the LangGraph saver and bridge (make demo-langgraph)
    # The PydanticAI demo (make demo-pydantic-ai), where the extra `pydantic-ai` is installed.
    *(["turnstate_app.contrib.pydantic_ai"] if find_spec("pydantic_ai") else []),
    # The OpenAI Agents SDK demo (make demo-openai-agents), where the extra `openai-agents` is installed.
    *(["turnstate_app.contrib.openai_agents"] if find_spec("agents") else []),
    # The Google ADK demo (make demo-google-adk), where the extra `google-adk` is installed.
    *(["turnstate_app.contrib.google_adk"] if find_spec("google") and find_spec("google.adk") else []),
    "demo_agents",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
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


def _database() -> dict[str, Any]:
    url = os.environ.get("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'example.sqlite3'}"
    db: dict[str, Any] = dict(dj_database_url.parse(url))
    if db["ENGINE"].endswith("sqlite3"):
        # Server and worker share one file: WAL, immediate transactions, a busy timeout.
        db["OPTIONS"] = {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    elif db["ENGINE"].endswith("mysql"):
        db["OPTIONS"] = {"charset": "utf8mb4"}
    return db


DATABASES = {"default": _database()}

STATIC_URL = "/static/"

# The answer pages (/answers/) ask a person to sign in with Django's own login view (/accounts/login/).
LOGIN_REDIRECT_URL = "turnstate_pages:inbox"

# E-mail: into DEMO_MAIL_DIR, one file per process, when a demo runs (it reads the link from there);
# printed by runserver otherwise.
if os.environ.get("DEMO_MAIL_DIR"):
    EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    EMAIL_FILE_PATH = os.environ["DEMO_MAIL_DIR"]
else:
    EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
DEFAULT_FROM_EMAIL = "agents@example.com"

# What a front end uses: the session (browser) or a token (API client).
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "turnstate example",
    "SWAGGER_UI_DIST": "SIDECAR",  # served locally: no CDN needed
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# The worker: Django's tasks API on the database backend; `manage.py db_worker` runs it.
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}

TURNSTATE = {
    "PORT": "turnstate_app.ports.ModelCheckpointCommandPort",
    "TOKEN_MAX_AGE": 24 * 3600,
    # Every answer becomes a continue_pause task; db_worker continues it with the AGENTS entry
    # the pause's graph.name / agent.name names. (`make demo`'s scripted agent, no framework's,
    # brings its own handler: DEMO_RESUME_HANDLER.)
    "RESUME_HANDLER": os.environ.get("DEMO_RESUME_HANDLER", "turnstate_app.handoff.enqueue_continuation"),
    # Each pause's owner is e-mailed the link to its answer page, absolute also when a worker mints.
    "NOTIFY": "turnstate_app.notify.email_owner",
    "PAGES_BASE_URL": os.environ.get("DEMO_PAGES_BASE_URL", "http://127.0.0.1:8000"),
    "AGENTS": {
        "trip": "demo_agents.trip.graph",  # make demo-langgraph
        **(
            {"booking": "demo_agents.booking.agent"} if find_spec("pydantic_ai") else {}
        ),  # make demo-pydantic-ai
        **(
            {"payments": "demo_agents.payments.agent"} if find_spec("agents") else {}
        ),  # make demo-openai-agents
        **(
            {"adk_payments": "demo_agents.adk_payments.app"}
            if find_spec("google") and find_spec("google.adk")
            else {}
        ),  # make demo-google-adk
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"turnstate_app": {"handlers": ["console"], "level": "WARNING"}},
}
