"""Someone who can write the store through the ORM but holds no key cannot make a run continue
from anything but the state its pauses were minted on.

Each test pauses the travel agent's run (``ask_date`` and an approval of ``book_flight``),
answers the group, edits the stored state behind every API, then continues: the continuation is
refused (``ran=False``, every pause of the group ``refused`` with the reason) and no tool runs.
Each is run again with the checks patched out inside the test, to show what they stop: with the
rows' MACs (``turnstate_app.integrity.row_verifies``) not checked the start binding still refuses,
naming what changed; with both patched out the edited state runs (two seats become nine).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.test import override_settings
from pydantic import TypeAdapter
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelResponse, ToolCallPart
from pydantic_ai.tools import DeferredToolRequests

from tests.contrib.pydantic_ai.agents import first_run, tool_runs, travel_agent
from tests.contrib.pydantic_ai.conversations import sync
from tests.contrib.pydantic_ai.rows import Args, calling_entry, edited_call, entry_mac, rewrite_entry
from tests.encryption_support import KEY_A
from turnstate_app.choices import ContinuationState
from turnstate_app.contrib.pydantic_ai import DjangoConversationStore, continue_agent, pause_deferred
from turnstate_app.contrib.pydantic_ai.models import StoredConversation, StoredEntry
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pauses import ResumedPause, resume_pause

pytestmark = pytest.mark.django_db

APPROVE = {"approved": True}
NINE_SEATS: Callable[[Args], Args] = lambda args: {**args, "seats": 9}  # noqa: E731
REQUESTS = TypeAdapter(DeferredToolRequests)
NO_MATCH = "does not match its MAC"
NO_MAC = "has no MAC"
BOOKED_NINE = "book_flight: booked 9 to Lisbon"


@pytest.fixture(params=["clear", "sealed"])
def keys(request: pytest.FixtureRequest, turnstate_settings: dict[str, Any]) -> str:
    """Each attack with values stored clear, and sealed with a configured key."""
    if request.param == "sealed":
        turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    return str(request.param)


class Checks:
    """The checks a test patches out, to show the edited state is what they refuse."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch

    def macs_off(self) -> None:
        """Every row's MAC taken as verifying (the rows' checks, the core's store included)."""
        self.monkeypatch.setattr("turnstate_app.integrity.row_verifies", lambda *args: True)

    def binding_off(self) -> None:
        """The start binding off: no history compared, no ``shown`` (calls and start) compared."""
        self.monkeypatch.setattr(
            "turnstate_app.contrib.pydantic_ai.continuing.history_changed", lambda *a: None
        )
        self.monkeypatch.setattr("turnstate_app.pauses.continuation.shown_verifies", lambda *args: True)

    def answers_off(self) -> None:
        """The MAC of each given answer taken as verifying."""
        self.monkeypatch.setattr("turnstate_app.pauses.handoff.answer_verifies", lambda *args: True)


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> Checks:
    return Checks(monkeypatch)


class Paused:
    """The travel agent's run, saved, paused and answered; the continuation not run yet."""

    def __init__(self, conversation_id: str, *, book: Any = APPROVE) -> None:
        self.conversation_id = conversation_id
        self.agent = travel_agent()
        self.store = DjangoConversationStore()
        result = first_run(self.agent, conversation_id)
        self.store.save_sync(result)
        minted = pause_deferred(result, store=self.store, run_id="r", session_id="s", agent=self.agent)
        self.pauses = {pause.claims.tool_call_id: pause for pause in minted}
        resume_pause(self.pauses["call-book"].token, book)
        self.last: ResumedPause = resume_pause(self.pauses["call-date"].token, "May 3rd")

    def continued(self) -> Any:
        return continue_agent(self.agent, self.last, store=self.store)

    def refused(self, *words: str) -> str:
        """The continuation refused with ``words`` in its reason, each pause ``refused``, nothing run."""
        result = self.continued()
        assert not result.ran and result.reason, result
        for word in words:
            assert word in result.reason
        rows = Pause.objects.filter(jti__in=[pause.claims.jti for pause in self.pauses.values()])
        assert {(row.continuation, row.continuation_reason) for row in rows} == {
            (ContinuationState.REFUSED, result.reason)
        }
        assert tool_runs("book_flight") == 0
        return str(result.reason)

    def ran(self, said: str) -> None:
        result = self.continued()
        assert result.ran and said in result.output, result
        assert tool_runs("book_flight") == 1

    def entry(self) -> StoredEntry:
        return calling_entry(self.conversation_id, "call-book")

    def record(self) -> StoredConversation:
        return StoredConversation.objects.get(conversation_id=self.conversation_id)


def guessed_mac(entry: StoredEntry, message: str) -> str:
    with override_settings(SECRET_KEY="django-insecure-a-guess", SECRET_KEY_FALLBACKS=[]):
        return entry_mac(entry, None, message)


LEFT_MACS: dict[str, Callable[[StoredEntry, str], str | None]] = {
    "kept": lambda entry, message: entry.value_mac,  # (a) the row's own MAC left beside the edit
    "removed": lambda entry, message: None,  # (c)
    "guessed key": guessed_mac,  # (d) recomputed with a guessed SECRET_KEY
}
OFF: dict[str, tuple[str, ...]] = {"none": (), "macs": ("macs",), "macs and binding": ("macs", "binding")}


def patched(checks: Checks, off: tuple[str, ...]) -> None:
    if "macs" in off:
        checks.macs_off()
    if "binding" in off:
        checks.binding_off()
    if "answers" in off:
        checks.answers_off()


# -- (a), (c), (d): the tool call's arguments edited, written back clear -------------------------


@pytest.mark.parametrize("left", list(LEFT_MACS))
@pytest.mark.parametrize("off", list(OFF))
def test_an_edited_tool_call_is_refused_whatever_mac_is_left_beside_it(
    keys: str, checks: Checks, left: str, off: str
) -> None:
    run = Paused(f"edit-{keys}-{left}-{off}".replace(" ", "-"))
    entry = run.entry()
    assert (entry.encryption_key_id is not None) == (keys == "sealed")
    message = edited_call(entry, "call-book", NINE_SEATS)
    rewrite_entry(entry, message, mac=LEFT_MACS[left](entry, message))
    patched(checks, OFF[off])

    if off == "none":
        run.refused(NO_MAC if left == "removed" else NO_MATCH, "StoredEntry", "unreadable record")
    elif off == "macs":
        run.refused(f"pause {run.pauses['call-book'].claims.jti}", "message 2 of 2 (a model response)")
    else:
        run.ran(BOOKED_NINE)


def test_an_edited_final_model_response_is_refused_too(checks: Checks) -> None:
    """The response that holds the calls is the last one; a text added to it is an edit as well."""
    run = Paused("edit-response")
    entry = run.entry()
    message = json.loads(edited_call(entry, "call-book", lambda args: args))
    message[0]["parts"].append({"part_kind": "text", "content": "The traveller asked for nine seats."})
    rewrite_entry(entry, json.dumps(message), mac=entry.value_mac)

    run.refused(NO_MATCH)


@pytest.mark.parametrize("off", list(OFF))
def test_edited_deferred_calls_in_the_record_are_refused(keys: str, checks: Checks, off: str) -> None:
    run = Paused(f"calls-{keys}-{off}".replace(" ", "-"))
    record = run.record()
    stored = sync(run.store.read_record, run.conversation_id)
    assert stored is not None and stored.deferred_tool_requests is not None
    requests = json.loads(REQUESTS.dump_json(stored.deferred_tool_requests))
    requests["metadata"]["call-date"] = {"question": "Which card number?"}
    StoredConversation.objects.filter(pk=record.pk).update(
        deferred_tool_requests=json.dumps(requests), encryption_key_id=None
    )
    patched(checks, OFF[off])

    if off == "none":
        run.refused(NO_MATCH, "StoredConversation")
    elif off == "macs":
        # The history is the one recorded; the keyed record of what was shown (its start) is not.
        run.refused(f"pause {run.pauses['call-book'].claims.jti}", "the question changed since it was asked")
    else:
        run.ran("book_flight: booked 2 to Lisbon")


# -- (b): the answer swapped ----------------------------------------------------------------------


@pytest.mark.parametrize("off", ["none", "macs", "macs and answers"])
def test_a_swapped_answer_is_refused_and_the_rejected_tool_does_not_run(checks: Checks, off: str) -> None:
    run = Paused(f"answer-{off}".replace(" ", "-"), book={"approved": False, "message": "too dear"})
    book = run.pauses["call-book"].claims
    swapped = CheckpointMetadata.objects.filter(
        thread_id=book.thread_id, checkpoint_id=book.checkpoint_id, key=f"answer:{book.jti}"
    ).update(value=json.dumps(APPROVE), encryption_key_id=None)
    assert swapped == 1
    patched(checks, {"none": (), "macs": ("macs",), "macs and answers": ("macs", "answers")}[off])

    if off in ("none", "macs"):  # the answer row fails its MAC, or (MACs off) the answer's record
        run.refused(f"pause {book.jti}: the answer changed since it was given")
    else:
        run.ran("book_flight: booked 2 to Lisbon")


# -- (e): a clear row planted under keys -----------------------------------------------------------


def planted_response(run: Paused, mac: str | None) -> None:
    """A model response planted as the conversation's newest message (clear, key id NULL): the same
    calls, nine seats; the record's head moved onto it."""
    head = run.record().head_id
    response = ModelResponse(
        parts=[
            ToolCallPart("ask_date", {"question": "Which date?"}, tool_call_id="call-date"),
            ToolCallPart("book_flight", {"destination": "Lisbon", "seats": 9}, tool_call_id="call-book"),
        ]
    )
    StoredEntry.objects.create(
        entry_id="planted",
        parent_id=head,
        conversation_id=run.conversation_id,
        message=ModelMessagesTypeAdapter.dump_json([response]).decode(),
        encryption_key_id=None,
        value_mac=mac,
    )
    StoredConversation.objects.filter(conversation_id=run.conversation_id).update(head_id="planted")


@pytest.mark.parametrize("off", list(OFF))
def test_a_clear_row_planted_under_keys_is_refused(
    turnstate_settings: dict[str, Any], checks: Checks, off: str
) -> None:
    turnstate_settings["ENCRYPTION_KEYS"] = [KEY_A]
    run = Paused(f"plant-{off}".replace(" ", "-"))
    assert run.entry().encryption_key_id is not None
    planted_response(run, mac=None)
    patched(checks, OFF[off])

    if off == "none":
        run.refused(NO_MAC, "planted")
    elif off == "macs":
        run.refused("holds 3 messages, its pauses were minted on 2: 1 were added since")
    else:
        run.ran(BOOKED_NINE)


# -- (f): messages deleted or reordered, an older deferred-calls value replayed --------------------


@pytest.mark.parametrize("off", list(OFF))
def test_older_messages_deleted_are_refused(keys: str, checks: Checks, off: str) -> None:
    """The user's request deleted and the response relinked to start the history."""
    run = Paused(f"cut-{keys}-{off}".replace(" ", "-"))
    entry = run.entry()
    StoredEntry.objects.filter(entry_id=entry.parent_id).delete()
    StoredEntry.objects.filter(pk=entry.pk).update(parent_id=None)
    patched(checks, OFF[off])

    if off == "none":
        run.refused(NO_MATCH, entry.entry_id)
    elif off == "macs":
        run.refused("holds 1 messages, its pauses were minted on 2: 1 were removed since")
    else:
        run.ran("book_flight: booked 2 to Lisbon")


def test_reordered_messages_are_refused(checks: Checks) -> None:
    run = Paused("reorder")
    response = run.entry()
    request = StoredEntry.objects.get(entry_id=response.parent_id)
    # The response first, the request after it, the head on the request: every row's value intact.
    StoredEntry.objects.filter(pk=response.pk).update(parent_id=None)
    StoredEntry.objects.filter(pk=request.pk).update(parent_id=response.entry_id)
    StoredConversation.objects.filter(conversation_id=run.conversation_id).update(head_id=request.entry_id)

    run.refused(NO_MATCH)
    checks.macs_off()
    again = Paused("reorder-2")
    response = again.entry()
    request = StoredEntry.objects.get(entry_id=response.parent_id)
    StoredEntry.objects.filter(pk=response.pk).update(parent_id=None)
    StoredEntry.objects.filter(pk=request.pk).update(parent_id=response.entry_id)
    StoredConversation.objects.filter(conversation_id=again.conversation_id).update(head_id=request.entry_id)
    # The last message is no longer a response holding the calls: the run would not find them.
    again.refused(f"pause {again.pauses['call-book'].claims.jti}", "message 1 of 2")


class FollowedUp:
    """The travel agent with a follow-up: the first group continued, a second pause
    (``buy_insurance``) minted on the conversation's next revision and answered."""

    def __init__(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        self.agent = travel_agent(follow_up=True)
        self.store = DjangoConversationStore()
        result = first_run(self.agent, conversation_id)
        self.store.save_sync(result)
        minted = pause_deferred(result, store=self.store, run_id="r", session_id="s", agent=self.agent)
        self.older = StoredConversation.objects.values(
            "head_id", "deferred_tool_requests", "encryption_key_id", "value_mac"
        ).get(conversation_id=conversation_id)
        pauses = {pause.claims.tool_call_id: pause for pause in minted}
        resume_pause(pauses["call-book"].token, APPROVE)
        last = resume_pause(pauses["call-date"].token, "May 3rd")
        continued = continue_agent(self.agent, last, store=self.store)
        assert continued.ran and len(continued.minted) == 1
        self.pause = continued.minted[0]
        self.last = resume_pause(self.pause.token, APPROVE)

    def refused(self, *words: str) -> str:
        result = continue_agent(self.agent, self.last, store=self.store)
        assert not result.ran and result.reason, result
        for word in words:
            assert word in result.reason
        row = Pause.objects.get(jti=self.pause.claims.jti)
        assert (row.continuation, row.continuation_reason) == (ContinuationState.REFUSED, result.reason)
        assert tool_runs("buy_insurance") == 0 and tool_runs("book_flight") == 1
        return str(result.reason)


def test_the_last_messages_deleted_are_refused_naming_how_many(keys: str) -> None:
    """The record's head moved back to where the first group paused, the later entries deleted:
    every row left verifies its MAC; the start the pause recorded does not."""
    run = FollowedUp(f"tail-{keys}")
    older_head = run.older["head_id"]
    StoredEntry.objects.filter(conversation_id=run.conversation_id, parent_id=older_head).delete()
    StoredConversation.objects.filter(conversation_id=run.conversation_id).update(head_id=older_head)

    run.refused(
        f"pause {run.pause.claims.jti}", "holds 2 messages, its pauses were minted on 4: 2 were removed"
    )


def test_an_older_deferred_calls_value_replayed_is_refused(keys: str) -> None:
    """The record set back, value and MAC together, to the deferred calls of the first pause."""
    run = FollowedUp(f"replay-{keys}")
    StoredConversation.objects.filter(conversation_id=run.conversation_id).update(
        deferred_tool_requests=run.older["deferred_tool_requests"],
        encryption_key_id=run.older["encryption_key_id"],
        value_mac=run.older["value_mac"],
    )

    run.refused("call-ins no longer deferred", "waits on tool call(s) call-book, call-date")
