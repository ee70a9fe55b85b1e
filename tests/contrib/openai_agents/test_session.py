"""``DjangoSession`` against the SDK's own ``SQLiteSession``: the same calls, the same outcomes.

Each scenario runs one sequence of calls on both sessions and compares every call's result;
sync and async callers, and ``pop_item`` under concurrent callers in real processes.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import uuid
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pytest
from agents.memory import SQLiteSession
from agents.memory.session import SessionABC
from agents.memory.session_settings import SessionSettings
from django.db import connection

from tests.contrib.openai_agents.processes import pop_all
from turnstate_app.contrib.openai_agents import DjangoSession
from turnstate_app.contrib.openai_agents.errors import UnreadableSessionItemError
from turnstate_app.contrib.openai_agents.models import StoredSessionItem
from turnstate_app.errors import CheckpointFieldError

pytestmark = pytest.mark.django_db(transaction=True)
SPAWN = multiprocessing.get_context("spawn")


def item(n: int) -> dict[str, Any]:
    role = "user" if n % 2 == 0 else "assistant"
    return {"role": role, "content": f"message {n} é ✓"}


def fresh_id() -> str:
    return f"session-{uuid.uuid4().hex[:10]}"


async def script(session: Any) -> list[Any]:
    """One sequence of every call, with each call's outcome."""
    outcomes: list[Any] = [await session.get_items(), await session.pop_item()]
    await session.add_items([item(n) for n in range(5)])
    await session.add_items([])
    outcomes += [await session.get_items(), await session.get_items(limit=2)]
    outcomes += [await session.get_items(limit=0), await session.get_items(limit=-1)]
    outcomes += [await session.get_items(limit=99), await session.pop_item(), await session.pop_item()]
    await session.add_items([item(7), {"type": "function_call_output", "call_id": "c1", "output": "ok"}])
    outcomes += [await session.get_items(limit=3), await session.get_items()]
    await session.clear_session()
    outcomes += [await session.get_items(), await session.pop_item()]
    await session.add_items([item(9)])
    outcomes += [await session.get_items()]
    return outcomes


def test_every_call_has_the_outcome_sqlite_session_gives() -> None:
    session_id = fresh_id()
    ours = asyncio.run(script(DjangoSession(session_id)))
    theirs = asyncio.run(script(SQLiteSession(session_id)))
    assert ours == theirs
    assert ours[2] == [item(n) for n in range(5)] and ours[3] == [item(3), item(4)]


def test_it_is_the_sdks_session() -> None:
    assert isinstance(DjangoSession(fresh_id()), SessionABC)


def test_session_settings_limit_is_the_default_limit_as_in_sqlite_session() -> None:
    session_id = fresh_id()

    async def run(session: Any) -> list[Any]:
        await session.add_items([item(n) for n in range(4)])
        return [await session.get_items(), await session.get_items(limit=3)]

    settings = SessionSettings(limit=2)
    ours = asyncio.run(run(DjangoSession(session_id, session_settings=settings)))
    assert ours == asyncio.run(run(SQLiteSession(session_id, session_settings=settings)))
    assert ours[0] == [item(2), item(3)]


def test_sessions_do_not_see_each_others_items() -> None:
    first, second = DjangoSession(fresh_id()), DjangoSession(fresh_id())
    first.add_items_sync([item(1)])
    second.add_items_sync([item(2)])
    assert first.get_items_sync() == [item(1)]
    second.clear_session_sync()
    assert first.get_items_sync() == [item(1)] and second.get_items_sync() == []


def test_sync_callers_have_the_same_calls() -> None:
    session = DjangoSession(fresh_id())
    session.add_items_sync([item(n) for n in range(3)])
    assert session.get_items_sync(limit=2) == [item(1), item(2)]
    assert session.pop_item_sync() == item(2)
    session.clear_session_sync()
    assert session.get_items_sync() == [] and session.pop_item_sync() is None


def test_async_callers_inside_a_running_loop() -> None:
    async def run() -> list[Any]:
        session = DjangoSession(fresh_id())
        await asyncio.gather(*(session.add_items([item(n)]) for n in range(3)))
        return await session.get_items()

    assert sorted(i["content"] for i in asyncio.run(run())) == [item(n)["content"] for n in range(3)]


def test_an_unreadable_row_is_refused_and_kept() -> None:
    session = DjangoSession(fresh_id())
    session.add_items_sync([item(1), item(2)])
    latest = StoredSessionItem.objects.filter(session_id=session.session_id).latest("pk")
    StoredSessionItem.objects.filter(pk=latest.pk).update(item="{not json")
    with pytest.raises(UnreadableSessionItemError):
        session.pop_item_sync()
    with pytest.raises(UnreadableSessionItemError):
        session.get_items_sync()
    assert StoredSessionItem.objects.filter(session_id=session.session_id).count() == 2


@pytest.mark.parametrize("bad", ["", "x" * 256, "a\x00b", "\ud800"])
def test_a_bad_session_id_is_refused_before_any_statement(bad: str) -> None:
    with pytest.raises(CheckpointFieldError, match="session_id"):
        DjangoSession(bad)


def test_an_item_that_is_not_json_is_refused_and_nothing_is_written() -> None:
    session = DjangoSession(fresh_id())
    with pytest.raises(CheckpointFieldError, match="items"):
        session.add_items_sync([item(1), {"content": object()}])
    assert session.get_items_sync() == []


def test_pop_item_gives_each_item_to_one_of_two_processes_popping_at_once() -> None:
    session = DjangoSession(fresh_id())
    session.add_items_sync([item(n) for n in range(40)])
    with SPAWN.Manager() as manager, ProcessPoolExecutor(2, mp_context=SPAWN) as pool:
        barrier = manager.Barrier(2)
        settings = dict(connection.settings_dict)
        futures = [pool.submit(pop_all, settings, session.session_id, barrier) for _ in range(2)]
        popped = [future.result(timeout=180) for future in futures]
    everything = [content for contents in popped for content in contents]
    assert sorted(everything) == sorted(item(n)["content"] for n in range(40))  # each once, none lost
    for contents in popped:  # each process saw the newest first
        numbers = [int(c.split()[1]) for c in contents]
        assert numbers == sorted(numbers, reverse=True)
    assert session.get_items_sync() == []


def test_many_items_in_one_call_keep_their_order_as_in_sqlite_session() -> None:
    session_id = fresh_id()
    batch = [item(n) for n in range(1203)]  # more than one INSERT's worth

    async def run(session: Any) -> list[Any]:
        await session.add_items(batch)
        return [await session.get_items(), await session.get_items(limit=700)]

    ours = asyncio.run(run(DjangoSession(session_id)))
    assert ours == asyncio.run(run(SQLiteSession(session_id)))
    assert ours[0] == batch and ours[1] == batch[-700:]
