"""The store from sync code (views, commands, workers), and a refusal that says what went wrong.

PydanticAI's ``save`` is a coroutine: in sync code, ``store.save(result)`` saves nothing (Python
warns that it "was never awaited"), and ``pause_deferred`` used to answer with "call
store.save(result) before pausing" -- what the user had just done. ``save_sync``/``load_sync``
are the sync forms; the snippet of docs/pydantic-ai.md runs here as written.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction
from pydantic_ai.conversation import Conversation

from tests.contrib.pydantic_ai.agents import first_run, tool_runs, travel_agent
from tests.contrib.pydantic_ai.conversations import conversation, texts, turn
from turnstate_app.contrib.pydantic_ai import (
    ConversationNotSavedError,
    DjangoConversationStore,
    pause_deferred,
)
from turnstate_app.models import Pause
from turnstate_app.pauses import resume_pause

pytestmark = pytest.mark.django_db

PAGE = Path(__file__).resolve().parents[3] / "docs" / "pydantic-ai.md"


def page_snippet() -> str:
    """The PydanticAI page's first code block, from its imports on (the settings lines are prose)."""
    block = re.search(r"```python\n(.*?)```", PAGE.read_text(), re.DOTALL)
    assert block is not None
    code = block.group(1)
    return textwrap.dedent(code[code.index("# the agent") :])


def test_the_pages_snippet_runs_in_sync_code_as_written() -> None:
    users = get_user_model().objects
    traveller, travel_desk = users.create_user("traveller"), users.create_user("desk")
    agent = travel_agent()
    scope: dict[str, Any] = {
        "agent": agent,
        "session_key": "session-1",
        "request": SimpleNamespace(user=traveller),
        "travel_desk": travel_desk,
    }
    exec(compile(page_snippet(), str(PAGE), "exec"), scope)  # noqa: S102 - the page's own code

    pauses = {pause.claims.tool_call_id: pause for pause in scope["pauses"]}
    assert set(pauses) == {"call-book", "call-date"} and all(p.resumable for p in pauses.values())
    assert Pause.objects.get(tool_call_id="call-book").owner == travel_desk
    resume_pause(pauses["call-date"].token, "May 3rd")
    scope["handle"](resume_pause(pauses["call-book"].token, {"approved": True}))
    assert tool_runs("book_flight") == 1


def test_save_sync_and_load_sync_run_on_the_callers_connection() -> None:
    store = DjangoConversationStore()
    with transaction.atomic():
        saved = conversation("sync-1", "one")
        entries = store.save_sync(saved, scope="alice")
        assert len(entries) == 2 and saved.revision is not None
        loaded = store.load_sync("sync-1", scope="alice")
        assert loaded is not None and loaded.revision == saved.revision
        loaded.messages += turn("two")
        store.save_sync(loaded)
        transaction.set_rollback(True)
    assert store.load_sync("sync-1") is None  # written inside the caller's transaction, rolled back
    store.save_sync(conversation("sync-2", "one", "two"))
    again = store.load_sync("sync-2", limit=2)
    assert again is not None and texts(again.messages) == ["q-two", "a-two"]
    assert store.load_sync("sync-2", scope="someone-else") is None


def test_a_save_that_was_not_awaited_is_named_in_the_refusal() -> None:
    store = DjangoConversationStore()
    result = first_run(travel_agent(), "trip-unawaited")
    store.save(result).close()  # what `store.save(result)` does in sync code: nothing
    with pytest.raises(ConversationNotSavedError) as refused:
        pause_deferred(result, store=store, run_id="r", session_id="s")
    message = str(refused.value)
    assert "'trip-unawaited' was never saved in this store" in message
    assert "not awaited" in message and "store.save_sync(result)" in message
    assert "await store.save(result)" in message
    assert Pause.objects.count() == 0


def test_a_later_run_whose_result_was_not_saved_is_refused() -> None:
    """A loaded conversation's run carries the loaded revision: the store's record at that
    revision holds none of the run's deferred calls, so it was not saved after the run."""
    store = DjangoConversationStore()
    store.save_sync(Conversation(conversation_id="trip-later"))
    loaded = store.load_sync("trip-later")
    assert loaded is not None
    result = travel_agent().run_sync("Book me two seats to Lisbon.", conversation=loaded)
    store.save(result).close()
    with pytest.raises(ConversationNotSavedError) as refused:
        pause_deferred(result, store=store, run_id="r", session_id="s")
    message = str(refused.value)
    assert f"revision {loaded.revision!r}" in message
    assert "not saved after this run" in message and "call-book" in message
    assert "store.save_sync(result)" in message
    assert Pause.objects.count() == 0


def test_a_conversation_saved_again_since_names_both_revisions() -> None:
    store = DjangoConversationStore()
    result = first_run(travel_agent(), "trip-moved")
    store.save_sync(result)
    paused_at = result.conversation.revision
    later = store.load_sync("trip-moved")
    assert later is not None
    later.messages += turn("meanwhile")
    store.save_sync(later)
    with pytest.raises(ConversationNotSavedError) as refused:
        pause_deferred(result, store=store, run_id="r", session_id="s")
    message = str(refused.value)
    assert f"saved again since: the store is at revision {later.revision!r}" in message
    assert f"the run at {paused_at!r}" in message
