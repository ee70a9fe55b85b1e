"""Work run in spawned child processes (importable, since spawn pickles functions by module path)."""

from __future__ import annotations

from typing import Any

from tests.processes import boot_django


def save_in_rounds(settings_dict: dict[str, Any], conversation_ids: list[str], name: str, barrier: Any) -> list[str]:
    """For each conversation in turn: load it, wait until every racer has loaded it, save a
    turn onto it (or create it, when the store does not have it), wait for the others.

    Returns one outcome per round: "saved", "conflict" or the error text.
    """
    boot_django(settings_dict)
    from pydantic_ai.conversation_store import ConversationConflict

    from tests.contrib.pydantic_ai.conversations import conversation, sync, turn
    from turnstate_app.contrib.pydantic_ai import DjangoConversationStore

    store = DjangoConversationStore()
    outcomes: list[str] = []
    for round_number, conversation_id in enumerate(conversation_ids):
        loaded = sync(store.load, conversation_id)
        barrier.wait(timeout=60)
        try:
            if loaded is None:
                sync(store.save, conversation(conversation_id, f"{name}-{round_number}"))
            else:
                loaded.messages += turn(f"{name}-{round_number}")
                sync(store.save, loaded)
            outcomes.append("saved")
        except ConversationConflict:
            outcomes.append("conflict")
        except Exception as exc:
            outcomes.append(f"{type(exc).__name__}: {exc}")
        barrier.wait(timeout=60)
    return outcomes
