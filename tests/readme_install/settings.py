"""``django-admin startproject``'s settings plus exactly the README's install section, nothing more.

The section's settings block is read from the README and run here as a reader appends it.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

SECRET_KEY = "readme-install-" + "x" * 50  # long and varied enough for check --deploy
DEBUG = False
ALLOWED_HOSTS = ["example.com"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "tests.readme_install.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
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

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.path.join(tempfile.gettempdir(), f"turnstate_readme_{os.getpid()}.sqlite3"),
    }
}

USE_TZ = True
STATIC_URL = "static/"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"


def _readme_install_settings() -> str:
    """The README's "add at the end" block of ``mysite/settings.py``, as written."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    install = readme.split("<!-- --8<-- [start:install] -->", 1)[1].split("<!-- --8<-- [end:install] -->")[0]
    appended = r"^```python\n(# mysite/settings\.py: add at the end\n.*?)^```$"
    (block,) = re.findall(appended, install, re.MULTILINE | re.DOTALL)
    return str(block)


exec(_readme_install_settings())  # noqa: S102 - the README's own settings, appended as a reader does
INSTALLED_APPS.remove("assistant")  # the reader's own app (`startapp assistant`), not a package here
