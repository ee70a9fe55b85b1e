"""Work run in spawned child processes (importable, since spawn pickles functions by module path)."""

from __future__ import annotations

from typing import Any

from tests.processes import boot_django


def continue_elsewhere(settings_dict: dict[str, Any], jti: str, barrier: Any) -> tuple[bool, str | None, str]:
    """Continue the answered pause ``jti`` with a fresh runner on ``DjangoSessionService``, from the
    database alone; ``(ran, reason, the invocation's last words)``."""
    boot_django(settings_dict)
    from django.db import connection

    from tests.contrib.google_adk.agents import payments_app, runner_for
    from turnstate_app.contrib.google_adk import DjangoSessionService, continue_invocation
    from turnstate_app.pauses import resumed

    try:
        answered = resumed(jti)
        if barrier is not None:
            barrier.wait(timeout=60)
        result = continue_invocation(runner_for(payments_app(), DjangoSessionService()), answered)
        said = [
            part.text
            for event in result.output or []
            for part in (event.content.parts if event.content else [])
            if part.text
        ]
        return result.ran, result.reason, " ".join(said)
    except Exception as exc:
        return False, f"{type(exc).__name__}: {exc}", ""
    finally:
        connection.close()


def continue_pause_elsewhere(settings_dict: dict[str, Any], jti: str) -> dict[str, Any]:
    """The hand-off task ``continue_pause`` for ``jti``, in a process of its own, with the ADK app in
    ``AGENTS``: what it returned."""
    boot_django(settings_dict)
    from django.conf import settings
    from django.db import connection
    from django.test import override_settings

    from tests.contrib.google_adk.agents import AGENTS
    from turnstate_app.tasks import continue_pause

    try:
        with override_settings(TURNSTATE={**getattr(settings, "TURNSTATE", {}), "AGENTS": AGENTS}):
            outcome: dict[str, Any] = continue_pause.call(jti)
        return outcome
    finally:
        connection.close()
