"""Continuations of one thread take turns, across processes, on every database.

Two pauses of one thread (parallel interrupts answered together) must not continue at
once on the same head: the second would fork the thread. A thread's turn is a claim row
(``thread_turn:current`` at ``(thread_id, "thread_turn")``) inserted only if absent, held
while one continuation runs and deleted when it ends. Waiting is a retry with backoff,
never a transaction held open: on SQLite an open write transaction blocks every other
writer (a framework's own checkpoint saver included) for as long as it lasts.

A holder that crashed leaves its row behind; a row older than ``STALLED_AFTER`` is taken
over (deleted only while it still holds what was read, so two waiters never both take it).
A run that takes longer than ``STALLED_AFTER`` can therefore lose its turn: set the setting
above the longest continuation.

The turn is re-entrant for its holder: :func:`turn_of` marks the thread as held in a
context variable, so code that already holds the turn (a continuation minting its next
pauses through ``pause_interrupts``) does not wait on itself.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import secrets
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, runtime_checkable

from asgiref.sync import sync_to_async

from turnstate_app.conf import conf
from turnstate_app.errors import ThreadBusyError
from turnstate_app.keys import THREAD_TURN_CHECKPOINT_ID, thread_turn_key
from turnstate_app.port_access import BlockingCommands
from turnstate_app.turnstate import TurnCheckpointStore

logger = logging.getLogger(__name__)

FIRST_DELAY = 0.02
MAX_DELAY = 0.5
"""Seconds between attempts: doubling from the first, with jitter, up to the most."""

_HELD: ContextVar[frozenset[str]] = ContextVar("turnstate_held_thread_turns", default=frozenset())
"""The threads whose turn the running code holds: taking one of them again does not wait."""


@runtime_checkable
class ReleasableCommands(Protocol):
    """A port that can give a claim back (both of the app's ports can)."""

    def release_metadata_sync(self, *, thread_id: str, checkpoint_id: str, key: str, value: str) -> bool: ...


class ThreadTurn:
    """One attempt at a time to hold ``thread_id``'s turn; :meth:`release` gives it back."""

    def __init__(self, store: TurnCheckpointStore, thread_id: str) -> None:
        commands = store.commands
        self.thread_id = thread_id
        self.holder = secrets.token_hex(16)
        self.value = ""
        self.place = {
            "thread_id": thread_id,
            "checkpoint_id": THREAD_TURN_CHECKPOINT_ID,
            "key": thread_turn_key(),
        }
        self._blocking = None if commands is None else BlockingCommands(commands)
        self._releaser = commands if isinstance(commands, ReleasableCommands) else None
        if commands is not None and self._releaser is None:
            logger.warning(
                "the checkpoint port %r cannot release claims, so continuations of thread %s do not "
                "take turns; use one of turnstate_app's ports",
                commands,
                thread_id,
            )
        self.held = False

    @property
    def enforced(self) -> bool:
        """Whether this store can hold a thread's turn at all (a wired port that can release)."""
        return self._blocking is not None and self._releaser is not None

    def try_take(self) -> bool:
        """One attempt: True when this turn now holds the thread (or turns cannot be enforced).

        A holder's row older than ``STALLED_AFTER`` is deleted (only while it still holds what
        was read, so of two waiters only one takes it over) and the claim tried once more.
        """
        if self._blocking is None or self._releaser is None:
            self.held = True
            return True
        if not self._claim():
            current = self._blocking.read(**self.place)
            if current is None or not _older_than(current, conf.STALLED_AFTER):
                return False
            if self._releaser.release_metadata_sync(**self.place, value=current):
                logger.warning(
                    "thread %s: took over a turn held for more than STALLED_AFTER (%ss) by a "
                    "continuation that never gave it back",
                    self.thread_id,
                    conf.STALLED_AFTER,
                )
            if not self._claim():
                return False
        self.held = True
        return True

    def _claim(self) -> bool:
        """Insert the turn row if absent, stamped now: its age counts from when it was taken."""
        assert self._blocking is not None
        self.value = json.dumps({"holder": self.holder, "since": time.time()})
        return self._blocking.claim(**self.place, value=self.value, task_id=None)

    def release(self) -> None:
        """Give the turn back (only this turn's row is ever deleted). Never raises."""
        if not self.held or not self.enforced:
            return
        self.held = False
        assert self._releaser is not None
        try:
            self._releaser.release_metadata_sync(**self.place, value=self.value)
        except Exception:
            logger.exception(
                "thread %s: giving the turn back failed; the next continuation takes it over after "
                "STALLED_AFTER (%ss)",
                self.thread_id,
                conf.STALLED_AFTER,
            )

    def busy(self, waited: float) -> ThreadBusyError:
        return ThreadBusyError(
            f"thread {self.thread_id!r} is busy: another continuation held its turn for the {waited:.1f}s "
            "this one waited"
        )


def take_turn(store: TurnCheckpointStore, thread_id: str, *, wait: float | None = None) -> ThreadTurn:
    """Wait (retrying, with backoff) for ``thread_id``'s turn; ``ThreadBusyError`` after ``wait`` seconds.

    ``wait`` defaults to ``STALLED_AFTER``: by then a holder that never gave the turn back is
    taken over, so waiting longer would never help.
    """
    turn = ThreadTurn(store, thread_id)
    limit = conf.STALLED_AFTER if wait is None else wait
    started = time.monotonic()
    for delay in _delays():
        if turn.try_take():
            return turn
        waited = time.monotonic() - started
        if waited >= limit:
            raise turn.busy(waited)
        time.sleep(min(delay, limit - waited))
    raise AssertionError("unreachable")  # pragma: no cover


async def atake_turn(store: TurnCheckpointStore, thread_id: str, *, wait: float | None = None) -> ThreadTurn:
    """:func:`take_turn` for async code: each attempt one thread hop, the waits on the event loop.

    Waiting inside the thread-sensitive thread would stall every other sync call of the
    process, among them the ones the turn's holder needs to finish.
    """
    turn = ThreadTurn(store, thread_id)
    attempt = sync_to_async(turn.try_take, thread_sensitive=True)
    limit = conf.STALLED_AFTER if wait is None else wait
    started = time.monotonic()
    for delay in _delays():
        if await attempt():
            return turn
        waited = time.monotonic() - started
        if waited >= limit:
            raise turn.busy(waited)
        await asyncio.sleep(min(delay, limit - waited))
    raise AssertionError("unreachable")  # pragma: no cover


def holds_turn(thread_id: str) -> bool:
    """Whether the running code (this context) holds ``thread_id``'s turn."""
    return thread_id in _HELD.get()


@contextmanager
def holding(turn: ThreadTurn) -> Iterator[None]:
    """Mark ``turn``'s thread as held by this context for the block (the turn is taken already)."""
    token = _HELD.set(_HELD.get() | {turn.thread_id})
    try:
        yield
    finally:
        _HELD.reset(token)


@contextmanager
def turn_of(store: TurnCheckpointStore, thread_id: str) -> Iterator[None]:
    """Hold ``thread_id``'s turn for the block; no wait when this context holds it already."""
    if holds_turn(thread_id):
        yield
        return
    turn = take_turn(store, thread_id)
    try:
        with holding(turn):
            yield
    finally:
        turn.release()


@asynccontextmanager
async def aturn_of(store: TurnCheckpointStore, thread_id: str) -> AsyncIterator[None]:
    """:func:`turn_of` for async code."""
    if holds_turn(thread_id):
        yield
        return
    turn = await atake_turn(store, thread_id)
    try:
        with holding(turn):
            yield
    finally:
        await sync_to_async(turn.release, thread_sensitive=True)()


def _delays() -> Any:
    delay = FIRST_DELAY
    while True:
        yield delay * random.uniform(0.5, 1.5)  # noqa: S311 - jitter, not a secret
        delay = min(delay * 2, MAX_DELAY)


def _older_than(value: str, seconds: float) -> bool:
    """Whether the turn row ``value`` was taken more than ``seconds`` ago (unreadable: yes)."""
    try:
        since = float(json.loads(value)["since"])
    except (ValueError, KeyError, TypeError):
        return True
    return time.time() - since > seconds
