"""Statements per PydanticAI continuation (a group of two deferred calls), on every connection
and thread; the test agent's tool recording its runs is left out.

The core's part for a group: the claim tried on the pause alone (it has a group: nothing
changes), the pause and its group read together, the other member's answer and turn state,
every member claimed in one UPDATE, the turn taken and given back, the completion. PydanticAI's
own: the conversation loaded (its record, its history) and saved (a locking read of the entry
it continues, the record's conditional UPDATE, the new entries). The record ``save`` reads is
the one ``load`` read a moment before, and the one read to mint the next pauses is the one
``save`` just wrote: neither is read again.
"""

from __future__ import annotations

import uuid

import pytest

from tests.contrib.pydantic_ai.agents import RUNS_THREAD
from tests.contrib.pydantic_ai.test_bridge import APPROVE, paused
from tests.statements_counted import counting
from turnstate_app.contrib.pydantic_ai import continue_agent
from turnstate_app.contrib.pydantic_ai.models import StoredConversation
from turnstate_app.pauses import resume_pause

pytestmark = pytest.mark.django_db(transaction=True)

GROUP_OF_TWO = 13
"""Was 15 (16 with the tool's own row): the core's 8 and PydanticAI's 5."""

RECORDS = StoredConversation._meta.db_table


def test_a_group_of_two_continues_in_thirteen_statements_reading_the_record_once() -> None:
    agent, store, pauses = paused(f"trip-{uuid.uuid4().hex[:8]}")
    resume_pause(pauses["call-book"].token, APPROVE)
    last = resume_pause(pauses["call-date"].token, "May 3rd")
    with counting(excluded=RUNS_THREAD) as counted:
        result = continue_agent(agent, last, store=store)
    assert result.ran and result.minted == []
    assert len(counted) <= GROUP_OF_TWO, counted.listing()
    assert len(counted.of(RECORDS, "SELECT")) == 1, counted.listing()


def test_the_record_just_saved_is_not_read_again_to_mint_the_next_pause() -> None:
    agent, store, pauses = paused(f"trip-{uuid.uuid4().hex[:8]}", follow_up=True)
    resume_pause(pauses["call-book"].token, APPROVE)
    last = resume_pause(pauses["call-date"].token, "May 3rd")
    with counting(excluded=RUNS_THREAD) as counted:
        result = continue_agent(agent, last, store=store)
    assert result.ran and len(result.minted) == 1
    # Loaded once; then only the next pause's own check that the conversation is saved.
    assert len(counted.of(RECORDS, "SELECT")) == 2, counted.listing()
