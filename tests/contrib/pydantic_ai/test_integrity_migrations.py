"""The real migrations, back and forth: rows written before the store kept MACs stay readable
(0004), and pauses minted before they recorded their run's start still continue (0005), unless
what they asked has changed."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.contrib.pydantic_ai.agents import first_run, tool_runs, travel_agent
from tests.contrib.pydantic_ai.rows import calling_entry, edited_call, entry_mac, rewrite_entry
from tests.encryption_support import KEY_A
from turnstate_app.choices import ContinuationState
from turnstate_app.contrib.pydantic_ai import DjangoConversationStore, continue_agent, pause_deferred
from turnstate_app.contrib.pydantic_ai.models import StoredConversation, StoredEntry
from turnstate_app.models import Pause
from turnstate_app.pauses import MintedPause, resume_pause
from turnstate_app.pauses.binding import identity_of, shown_mac
from turnstate_app.pauses.shown import shown_digest

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE_MACS = [("turnstate_pydantic_ai", "0003_encryption_key_id")]
CALLS = {
    "call-book": {"tool_name": "book_flight", "args": {"destination": "Lisbon", "seats": 2}},
    "call-date": {"tool_name": "ask_date", "args": {"question": "Which date?"}},
}


def migrate(targets: list[tuple[str, str]] | None = None) -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(targets or executor.loader.graph.leaf_nodes())


def minted_before(conversation_id: str) -> tuple[Any, DjangoConversationStore, dict[str, MintedPause]]:
    """A run paused and stored as a build before MACs and start bindings left it: each pause's
    ``shown`` MAC over its tool and arguments only."""
    agent = travel_agent()
    store = DjangoConversationStore()
    result = first_run(agent, conversation_id)
    store.save_sync(result)
    minted = pause_deferred(result, store=store, run_id="r", session_id="s", agent=agent)
    for pause in Pause.objects.filter(thread_id=conversation_id):
        legacy = shown_mac(identity_of(pause), shown_digest(CALLS[pause.tool_call_id or ""]))
        Pause.objects.filter(pk=pause.pk).update(shown_digest=legacy)
    return agent, store, {pause.claims.tool_call_id or "": pause for pause in minted}


@pytest.mark.parametrize("keys", ["clear", "sealed"])
def test_rows_and_pauses_from_before_continue_and_a_changed_question_stays_refused(
    keys: str, turnstate_settings: dict[str, Any]
) -> None:
    if keys == "sealed":
        turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    kept = minted_before(f"kept-{keys}")
    changed = minted_before(f"changed-{keys}")
    # An edit an earlier build would have refused too: the row rewritten as the app writes one.
    entry = calling_entry(f"changed-{keys}", "call-book")
    message = edited_call(entry, "call-book", lambda args: {**args, "seats": 9})
    rewrite_entry(entry, message, mac=entry_mac(entry, None, message))
    legacy = dict(Pause.objects.values_list("jti", "shown_digest"))
    try:
        migrate(BEFORE_MACS)
        migrate()
        assert not StoredEntry.objects.filter(value_mac__isnull=True).exists()
        assert not StoredConversation.objects.filter(value_mac__isnull=True).exists()
        now = dict(Pause.objects.values_list("jti", "shown_digest"))
        # Keyed again with the start: the unchanged conversation's pauses; not the changed call's.
        assert {jti for jti in legacy if now[jti] != legacy[jti]} == {
            *(pause.claims.jti for pause in kept[2].values()),
            changed[2]["call-date"].claims.jti,
        }

        for agent, store, pauses in (kept, changed):
            resume_pause(pauses["call-book"].token, {"approved": True})
            last = resume_pause(pauses["call-date"].token, "May 3rd")
            result = continue_agent(agent, last, store=store)
            if pauses is kept[2]:
                assert result.ran and "booked 2 to Lisbon" in result.output
            else:
                assert not result.ran and result.reason and "message 2 of 2" in result.reason
                row = Pause.objects.get(jti=pauses["call-book"].claims.jti)
                assert row.continuation == ContinuationState.REFUSED
        assert tool_runs("book_flight") == 1
    finally:
        migrate()
