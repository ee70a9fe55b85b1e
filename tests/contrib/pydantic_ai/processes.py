"""Work run in spawned child processes (importable, since spawn pickles functions by module path)."""

from __future__ import annotations

from typing import Any

from tests.processes import boot_django


def save_in_rounds(
    settings_dict: dict[str, Any], conversation_ids: list[str], name: str, barrier: Any
) -> list[str]:
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


def answer_then_continue(
    settings_dict: dict[str, Any], rounds: list[tuple[str, Any]], barrier: Any
) -> list[tuple[bool, str | None]]:
    """Per round: answer one pause of a two-pause group, wait for the other racer to answer
    its own, then both continue the run at once. Returns (ran, reason) per round."""
    boot_django(settings_dict)
    from tests.contrib.pydantic_ai.agents import travel_agent
    from turnstate_app.contrib.pydantic_ai import DjangoConversationStore, continue_agent
    from turnstate_app.pauses import resume_pause

    agent = travel_agent()
    store = DjangoConversationStore()
    outcomes: list[tuple[bool, str | None]] = []
    for token, answer in rounds:
        resumed = resume_pause(token, answer)
        barrier.wait(timeout=60)
        try:
            result = continue_agent(agent, resumed, store=store)
            outcomes.append((result.ran, result.reason))
        except Exception as exc:
            outcomes.append((False, f"{type(exc).__name__}: {exc}"))
        barrier.wait(timeout=60)
    return outcomes


def delete_or_fork(
    settings_dict: dict[str, Any], conversation_ids: list[str], role: str, barrier: Any
) -> list[str]:
    """Per round, at the same moment as the other racer: delete the conversation, or fork it.

    Returns "deleted", "forked", "refused" (the fork found it gone) or the error text.
    """
    boot_django(settings_dict)
    from pydantic_ai.exceptions import UserError

    from tests.contrib.pydantic_ai.conversations import sync
    from turnstate_app.contrib.pydantic_ai import DjangoConversationStore

    store = DjangoConversationStore()
    outcomes: list[str] = []
    for conversation_id in conversation_ids:
        barrier.wait(timeout=60)
        try:
            if role == "delete":
                sync(store.delete, conversation_id)
                outcomes.append("deleted")
            else:
                sync(store.fork, conversation_id, new_conversation_id=f"{conversation_id}-fork")
                outcomes.append("forked")
        except UserError:  # ConversationConflict is one; so is "not in the store"
            outcomes.append("refused")
        except Exception as exc:
            outcomes.append(f"{type(exc).__name__}: {exc}")
        barrier.wait(timeout=60)
    return outcomes
