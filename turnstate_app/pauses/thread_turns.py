"""Continuations of one thread take turns, across processes, on every database.

Two pauses of one thread (parallel interrupts answered together) must not continue at
once on the same head: the second would fork the thread. A thread's turn is a claim row
(``thread_turn:current`` at ``(thread_id, "thread_turn")``) inserted only if absent, held
while one continuation runs and deleted when it ends. Waiting is a retry with backoff,
never a transaction held open: on SQLite an open write transaction blocks every other
writer (a framework's own checkpoint saver included) for as long as it lasts.

A holder that crashed leaves its row behind; a row older than ``STALLED_AFTER`` is taken
over (deleted only while it still holds what was read, so two waiters never both take it).
A holder that is alive is never taken over, however long its run: while it holds the turn
(:func:`holding`) a background thread rewrites a heartbeat row of its own
(``thread_turn:alive:<holder>``, same place) every ``STALLED_AFTER / 3`` seconds, for as
long as the turn row still names it. A waiter takes over only a turn row older than
``STALLED_AFTER`` whose holder has not beaten for as long, and waiting by default lasts
until ``STALLED_AFTER`` has passed without a sign of life from the holder (an explicit
``wait`` is a hard limit). The heartbeat is a separate row because the port has no
compare-and-set: rewriting the turn row itself could overwrite a waiter's fresh claim.

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
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, runtime_checkable

from asgiref.sync import sync_to_async
from django.db import connections

from turnstate_app import telemetry
from turnstate_app.conf import conf
from turnstate_app.errors import ThreadBusyError
from turnstate_app.keys import THREAD_TURN_CHECKPOINT_ID, thread_turn_alive_key, thread_turn_key
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
        self.holder_seen_alive = 0.0
        """``time.monotonic()`` when this waiter last saw the holder's heartbeat fresh."""
        self._heartbeat: _Heartbeat | None = None

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
            if current is None:
                return False
            beat = self._heartbeat_of(current)
            if beat is not None and not _older_than(beat, conf.STALLED_AFTER, field="at"):
                self.holder_seen_alive = time.monotonic()
                return False
            if not _older_than(current, conf.STALLED_AFTER):
                return False
            if beat is not None:  # the dead holder's last heartbeat goes with its turn
                self._releaser.release_metadata_sync(**self._alive_place(current), value=beat)
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

    def _alive_place(self, value: str) -> dict[str, str]:
        """Where the holder named in the turn row ``value`` beats (its own key, the turn's place)."""
        try:
            holder = str(json.loads(value)["holder"])
        except (ValueError, KeyError, TypeError):
            holder = ""
        return {**self.place, "key": thread_turn_alive_key(holder)}

    def _heartbeat_of(self, value: str) -> str | None:
        assert self._blocking is not None
        return self._blocking.read(**self._alive_place(value))

    def keep_alive(self) -> None:
        """Start beating while this turn is held (see the module); :meth:`release` stops it."""
        if self.held and self.enforced and self._heartbeat is None:
            self._heartbeat = _Heartbeat(self)
            self._heartbeat.start()

    def beat(self) -> bool:
        """One heartbeat, only while the turn row still names this turn: False once it does not."""
        assert self._blocking is not None
        if self._blocking.read(**self.place) != self.value:
            logger.warning(
                "thread %s: the turn was taken over while its continuation still ran; raise "
                "STALLED_AFTER (%ss) above the longest pause of a continuation's process",
                self.thread_id,
                conf.STALLED_AFTER,
            )
            return False
        beat = json.dumps({"at": time.time()})
        self._blocking.write(**self._alive_place(self.value), value=beat, task_id=None)
        return True

    def forget_heartbeat(self) -> None:
        """Delete this turn's heartbeat row, if it still holds one (only its own beat is deleted)."""
        assert self._blocking is not None and self._releaser is not None
        place = self._alive_place(self.value)
        beat = self._blocking.read(**place)
        if beat is not None:
            self._releaser.release_metadata_sync(**place, value=beat)

    def release(self) -> None:
        """Give the turn back (only this turn's row is ever deleted), then its heartbeat. Never raises.

        The heartbeat row outlives the turn row: a waiter that read the turn row while the
        holder was writing its outcome must still see the holder alive, not take the turn over.
        """
        heartbeat, self._heartbeat = self._heartbeat, None
        if heartbeat is not None:
            heartbeat.stop()
        if not self.held or not self.enforced:
            return
        self.held = False
        assert self._releaser is not None
        try:
            self._releaser.release_metadata_sync(**self.place, value=self.value)
        except Exception as exc:
            logger.error(
                "thread %s: giving the turn back failed; the next continuation takes it over after "
                "STALLED_AFTER (%ss): %s",
                self.thread_id,
                conf.STALLED_AFTER,
                telemetry.described(exc),
            )
        if heartbeat is not None and heartbeat.beaten:
            try:
                self.forget_heartbeat()
            except Exception as exc:
                logger.error(
                    "thread %s: deleting the turn's heartbeat failed: %s",
                    self.thread_id,
                    telemetry.described(exc),
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
        waited = _waited(turn, started, extend=wait is None)
        if waited >= limit:
            raise turn.busy(time.monotonic() - started)
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
        waited = _waited(turn, started, extend=wait is None)
        if waited >= limit:
            raise turn.busy(time.monotonic() - started)
        await asyncio.sleep(min(delay, limit - waited))
    raise AssertionError("unreachable")  # pragma: no cover


def holds_turn(thread_id: str) -> bool:
    """Whether the running code (this context) holds ``thread_id``'s turn."""
    return thread_id in _HELD.get()


@contextmanager
def holding(turn: ThreadTurn) -> Iterator[None]:
    """Mark ``turn``'s thread as held by this context for the block, its heartbeat going.

    The heartbeat goes on after the block, while the outcome is written, until
    :meth:`ThreadTurn.release` gives the turn back.
    """
    token = _HELD.set(_HELD.get() | {turn.thread_id})
    turn.keep_alive()
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


class _Heartbeat:
    """The thread that beats for a held turn every ``STALLED_AFTER / 3`` seconds until stopped."""

    def __init__(self, turn: ThreadTurn) -> None:
        self.turn = turn
        self.interval = conf.STALLED_AFTER / 3
        self.stopped = threading.Event()
        self.beaten = False
        self.thread = threading.Thread(target=self._run, name=f"turnstate-turn-{turn.thread_id}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        try:
            while not self.stopped.wait(self.interval):
                try:
                    if not self.turn.beat():
                        return
                    self.beaten = True
                except Exception as exc:
                    logger.error(
                        "thread %s: the turn's heartbeat failed: %s",
                        self.turn.thread_id,
                        telemetry.described(exc),
                    )
        finally:
            connections.close_all()  # this thread's own connections only

    def stop(self) -> None:
        """Stop beating; the last beat's row stays for :meth:`ThreadTurn.release` to delete."""
        self.stopped.set()
        self.thread.join(timeout=max(self.interval, 5.0))


def _waited(turn: ThreadTurn, started: float, *, extend: bool) -> float:
    """Seconds waited so far; with ``extend``, since the holder was last seen alive."""
    return time.monotonic() - (max(started, turn.holder_seen_alive) if extend else started)


def _delays() -> Any:
    delay = FIRST_DELAY
    while True:
        yield delay * random.uniform(0.5, 1.5)  # noqa: S311 - jitter, not a secret
        delay = min(delay * 2, MAX_DELAY)


def _older_than(value: str, seconds: float, *, field: str = "since") -> bool:
    """Whether the row ``value`` was stamped (``field``) more than ``seconds`` ago (unreadable: yes)."""
    try:
        since = float(json.loads(value)[field])
    except (ValueError, KeyError, TypeError):
        return True
    return time.time() - since > seconds
