#!/usr/bin/env python
"""``DjangoConversationStore``: a 25-turn chat saved after every turn, beside its floor.

Each turn adds a user prompt (200 bytes) and a model reply (2 KB) to the conversation, and the
conversation is saved: PydanticAI's ``save`` (awaited) and ``save_sync`` (sync code) on
``DjangoConversationStore``, against **the floor**: the same rows (the record's new revision,
head and usage; the two new entries, their messages serialised by the store's own codec)
written with Django's cursor in one transaction, reached the same way (one hop onto Django's
thread-sensitive executor for the awaited form, none for sync). PydanticAI's
``InMemoryConversationStore`` is timed beside them for scale. The contenders take turns in a
rotating order, one chat each, per round; it reports the median save per turn of each round
and the median of the rounds, and each as a ratio to its floor, with the statements a save
sends through Django's cursor (counted by ``execute_wrapper``).

A benchmark, not a test: it prints a table, writes ``bench/results/conversation-store-<vendor>.json``
and exits 0. Needs the ``pydantic-ai`` extra. From the repository root::

    .venv/bin/python bench/conversation_store.py --database sqlite
    .venv/bin/python bench/conversation_store.py --database postgres://postgres@127.0.0.1:5432/turnstate_bench_cs
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
sys.path[:] = [p for p in sys.path if Path(p or os.curdir).resolve() != BENCH_DIR]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.common import (  # noqa: E402 - needs the repository root on sys.path
    RESULTS_DIR,
    configure_django,
    ensure_postgres_database,
    environment,
    finish_environment,
    make_target,
    median,
    rotation,
    server_version,
    write_json,
)

TURNS = 25
PROMPT_BYTES = 200
REPLY_BYTES = 2_000
TARGET = 2.0


def text(size: int, salt: int) -> str:
    return "".join(chr(97 + (salt + i) % 26) for i in range(64)) * (size // 64) + "." * (size % 64)


def turn_messages(turn: int) -> list[Any]:
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

    return [
        ModelRequest(parts=[UserPromptPart(text(PROMPT_BYTES, turn))]),
        ModelResponse(parts=[TextPart(text(REPLY_BYTES, 1000 + turn))], model_name="bench"),
    ]


@dataclass
class Contender:
    name: str
    is_async: bool
    save: Callable[[Any], Any]  # save(conversation): a coroutine when is_async
    samples: list[float] = field(default_factory=list)  # median save of each round, ms


class Floor:
    """The same rows a save writes, with Django's cursor, in one transaction."""

    def __init__(self) -> None:
        from django.db import connection

        from turnstate_app.contrib.pydantic_ai.models import StoredConversation, StoredEntry

        quote = connection.ops.quote_name
        self.record_table = quote(StoredConversation._meta.db_table)
        self.entry_table = quote(StoredEntry._meta.db_table)
        self.quote = quote

    def save(self, conversation: Any) -> None:
        """Insert or update the record, insert the unsaved messages as entries: one transaction."""
        from django.db import connection, transaction
        from pydantic_ai.conversation_store import ConversationRecord
        from pydantic_ai.messages import ModelMessage

        from turnstate_app.contrib.pydantic_ai.codec import message_json, record_values

        start = getattr(conversation, "_bench_saved", 0)
        head = getattr(conversation, "_bench_head", None)
        unsaved: list[ModelMessage] = list(conversation.messages[start:])
        entries = []
        for message in unsaved:
            entry_id = str(uuid.uuid4())
            entries.append((entry_id, head, conversation.conversation_id, "message", message_json(message)))
            head = entry_id
        record = ConversationRecord(
            conversation_id=conversation.conversation_id, head_id=head, usage=conversation.usage
        )
        values = record_values(record)
        now = connection.ops.adapt_datetimefield_value(values["updated_at"])
        values["updated_at"] = now
        columns = list(values)
        with transaction.atomic(), connection.cursor() as cursor:
            if conversation.revision is None:
                names = ", ".join(self.quote(c) for c in ["conversation_id", *columns])
                marks = ", ".join(["%s"] * (len(columns) + 1))
                cursor.execute(
                    f"INSERT INTO {self.record_table} ({names}) VALUES ({marks})",
                    [conversation.conversation_id, *values.values()],
                )
            else:
                sets = ", ".join(f"{self.quote(c)} = %s" for c in columns)
                cursor.execute(
                    f"UPDATE {self.record_table} SET {sets} WHERE {self.quote('conversation_id')} = %s",
                    [*values.values(), conversation.conversation_id],
                )
            names = ", ".join(
                self.quote(c)
                for c in ("entry_id", "parent_id", "conversation_id", "kind", "message", "created_at")
            )
            rows = ", ".join(["(%s, %s, %s, %s, %s, %s)"] * len(entries))
            cursor.execute(
                f"INSERT INTO {self.entry_table} ({names}) VALUES {rows}",
                [part for entry in entries for part in (*entry, now)],
            )
        conversation.revision = record.revision
        conversation._bench_saved = len(conversation.messages)
        conversation._bench_head = head


def contenders() -> list[Contender]:
    from asgiref.sync import sync_to_async
    from pydantic_ai.conversation_store import InMemoryConversationStore

    from turnstate_app.contrib.pydantic_ai import DjangoConversationStore

    store = DjangoConversationStore()
    floor = Floor()
    hop = sync_to_async(floor.save, thread_sensitive=True)
    memory = InMemoryConversationStore()
    return [
        Contender("DjangoConversationStore.save", True, store.save),
        Contender("floor (async: one hop)", True, hop),
        Contender("DjangoConversationStore.save_sync", False, store.save_sync),
        Contender("floor (sync)", False, floor.save),
        Contender("InMemoryConversationStore.save", True, memory.save),
    ]


def chat(contender: Contender, loop: asyncio.AbstractEventLoop) -> list[float]:
    """One 25-turn chat: the milliseconds of each turn's save."""
    from pydantic_ai.conversation import Conversation

    conversation = Conversation(conversation_id=f"chat-{uuid.uuid4().hex}", messages=[])
    times = []
    for turn in range(TURNS):
        conversation.messages.extend(turn_messages(turn))
        started = time.perf_counter()
        if contender.is_async:
            loop.run_until_complete(contender.save(conversation))
        else:
            contender.save(conversation)
        times.append((time.perf_counter() - started) * 1000)
    return times


def statements_per_save(contender: Contender, loop: asyncio.AbstractEventLoop) -> int:
    """Statements the 25th save of a chat sends through Django's cursor (``execute_wrapper``: a
    transaction's BEGIN and COMMIT on PostgreSQL go through the driver and are not among them)."""
    from asgiref.sync import sync_to_async
    from django.db import connection
    from pydantic_ai.conversation import Conversation

    seen: list[str] = []

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        seen.append(sql)
        return execute(sql, params, many, context)

    def attach() -> None:
        connection.execute_wrappers.append(wrapper)

    def detach() -> None:
        connection.execute_wrappers.remove(wrapper)

    conversation = Conversation(conversation_id=f"count-{uuid.uuid4().hex}", messages=[])
    for turn in range(TURNS):
        conversation.messages.extend(turn_messages(turn))
        last = turn == TURNS - 1
        if last:
            loop.run_until_complete(
                sync_to_async(attach, thread_sensitive=True)()
            ) if contender.is_async else attach()
        if contender.is_async:
            loop.run_until_complete(contender.save(conversation))
        else:
            contender.save(conversation)
    loop.run_until_complete(
        sync_to_async(detach, thread_sensitive=True)()
    ) if contender.is_async else detach()
    return len(seen)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--database", required=True, help="'sqlite' or a postgres:// URL of the bench's own database"
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--chats", type=int, default=4, help="25-turn chats per contender and round")
    parser.add_argument("--output", type=Path, default=None)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    target = make_target(args.database)
    if target.vendor == "postgresql":
        ensure_postgres_database(target.conninfo)
    configure_django(target, extra_apps=["turnstate_app.contrib.pydantic_ai"])
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    env = environment(target, server_version(target), args)
    env["packages"] = {name: metadata.version(name) for name in ("pydantic-ai-slim", "pydantic")}
    started = time.monotonic()
    print(
        f"{env['database_server'].split(' on ')[0]} | Django {env['django']} | {env['packages']}", flush=True
    )
    everyone = contenders()
    for round_no in range(-1, args.rounds):  # round -1 warms up and is dropped
        for chunk in range(args.chats if round_no >= 0 else 1):
            for contender in rotation(everyone, chunk, round_no):
                times = chat(contender, loop)
                if round_no >= 0:
                    contender.samples.append(median(times))
        print(f"round {round_no + 1}/{args.rounds} done", flush=True)
    counted = {c.name: statements_per_save(c, loop) for c in everyone if "InMemory" not in c.name}
    finish_environment(env, started)
    floors = {True: everyone[1], False: everyone[3]}
    rows = []
    for contender in everyone:
        floor = floors[contender.is_async]
        ms = median(contender.samples)
        ratio = ms / median(floor.samples)
        rows.append(
            {
                "contender": contender.name,
                "median_save_ms": round(ms, 3),
                "vs_floor": round(ratio, 2),
                "floor": floor.name,
                "round_medians_ms": [round(x, 3) for x in contender.samples],
                "statements": counted.get(contender.name),
                "target": TARGET if contender.name.startswith("Django") else None,
                "meets_target": ratio <= TARGET if contender.name.startswith("Django") else None,
            }
        )
    print()
    print(f"{'25-turn chat, save per turn':<36} {'median ms':>10} {'vs floor':>9} {'statements':>10}")
    for row in rows:
        missed = "  MISSED" if row["meets_target"] is False else ""
        print(
            f"{row['contender']:<36} {row['median_save_ms']:>10} {row['vs_floor']:>9} "
            f"{row['statements']!s:>10}{missed}"
        )
    write_json(
        args.output or RESULTS_DIR / f"conversation-store-{target.vendor}.json",
        {"environment": env, "rows": rows},
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
