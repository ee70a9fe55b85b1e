"""Django's tasks API: built in from Django 6, the ``django-tasks`` backport on 5.2."""

try:
    from django.tasks import task
except ImportError:  # Django 5.2
    from django_tasks import task  # type: ignore[no-redef]

__all__ = ["task"]
