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
