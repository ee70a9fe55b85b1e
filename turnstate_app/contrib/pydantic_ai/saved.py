"""Whether a run's conversation is saved in the store at the revision its pauses continue.

A pause continues a stored revision, so ``pause_deferred`` refuses a run the store does not
hold. The reason names what was found, since the usual cause is a ``store.save(result)`` in sync
code: a coroutine nobody awaited, which saved nothing.
"""

from __future__ import annotations

from pydantic_ai.conversation_store import ConversationRecord
from pydantic_ai.tools import DeferredToolRequests

HOW_TO_SAVE = (
    "save the run's result first: store.save_sync(result) in sync code, await store.save(result) in "
    "async code (a store.save(result) that is not awaited saves nothing)"
)


def call_ids(requests: DeferredToolRequests | None) -> set[str]:
    if requests is None:
        return set()
    return {part.tool_call_id for part in [*requests.approvals, *requests.calls]}


def unsaved_reason(
    conversation_id: str,
    revision: str | None,
    record: ConversationRecord | None,
    requests: DeferredToolRequests,
) -> str | None:
    """Why the store does not hold this run at ``revision``; None when it does."""
    if record is None:
        return f"conversation {conversation_id!r} was never saved in this store; {HOW_TO_SAVE}"
    if revision is None:
        return (
            f"the run's conversation {conversation_id!r} was not saved (it has no revision), and this "
            f"store holds another conversation of that id, at revision {record.revision!r}; {HOW_TO_SAVE}"
        )
    if record.revision != revision:
        return (
            f"conversation {conversation_id!r} was saved again since: the store is at revision "
            f"{record.revision!r}, the run at {revision!r}; pause a run right after saving it, before "
            "anything saves the conversation again"
        )
    missing = sorted(call_ids(requests) - call_ids(record.deferred_tool_requests))
    if missing:
        return (
            f"conversation {conversation_id!r} was not saved after this run: the store's revision "
            f"{revision!r} defers none of the run's calls {missing}; {HOW_TO_SAVE}"
        )
    return None
