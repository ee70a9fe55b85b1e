"""Work run in spawned child processes (importable, since spawn pickles functions by module path)."""

from __future__ import annotations

from typing import Any

from tests.processes import boot_django


def pop_all(settings_dict: dict[str, Any], session_id: str, barrier: Any) -> list[str]:
    """Pop the session's items until it is empty, starting with the others; the contents popped."""
    boot_django(settings_dict)
    from turnstate_app.contrib.openai_agents import DjangoSession

    session = DjangoSession(session_id)
    barrier.wait(timeout=60)
    popped: list[str] = []
    while (item := session.pop_item_sync()) is not None:
        popped.append(item["content"])
    return popped


def continue_elsewhere(settings_dict: dict[str, Any], jti: str, barrier: Any) -> tuple[bool, str | None]:
    """Continue the answered pause ``jti`` with a fresh agent, from the database alone."""
    boot_django(settings_dict)
    from tests.contrib.openai_agents.agents import payments_agent
    from turnstate_app.contrib.openai_agents import continue_run
    from turnstate_app.pauses import resumed

    answered = resumed(jti)
    if barrier is not None:
        barrier.wait(timeout=60)
    try:
        result = continue_run(payments_agent(), answered)
    except Exception as exc:
        return False, f"{type(exc).__name__}: {exc}"
    return result.ran, result.reason
