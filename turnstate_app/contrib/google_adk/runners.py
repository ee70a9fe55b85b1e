"""The ``Runner`` the hand-off task continues an ``AGENTS`` entry with: on Django's database."""

from __future__ import annotations

from typing import Any

from google.adk.apps import App
from google.adk.runners import Runner

from turnstate_app.contrib.google_adk.session import DjangoSessionService


def runner_of(target: Any) -> Runner:
    """A runner of ``target`` (an ADK ``App``, or a root agent whose sessions are the app of its own
    name, as its pauses record) over :class:`DjangoSessionService`."""
    if isinstance(target, App):
        return Runner(app=target, session_service=DjangoSessionService())
    return Runner(agent=target, app_name=target.name, session_service=DjangoSessionService())
