"""Django's tasks framework: ``django.tasks`` from Django 6.0, the ``django-tasks`` backport on 5.2.

The only module that names both; everything else imports ``task`` from here.
"""

from __future__ import annotations

try:
    from django.tasks import task
except ImportError:  # Django 5.2: pip install 'turnstate-app[tasks]' (the django-tasks backport)
    from django_tasks import task  # type: ignore[no-redef]

__all__ = ["task"]
