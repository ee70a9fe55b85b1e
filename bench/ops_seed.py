"""The store ``bench/ops.py`` measures: what 90 days of use leave in the two tables.

Seeding is not timed. Rows are generated one pause group (a "slot") at a time and streamed to
PostgreSQL's ``COPY … FREEZE`` as text, so a 10M-row store never exists as a list in memory: the
store's rows go straight to the server, the ledger's to a temporary file copied after them.
Each slot draws from its own random generator, so a size gives the same rows on every run.

Under steady traffic (``seed_store(..., steady_traffic=True)``) the last ``STEADY_DAYS`` hold the
same slots at every size and only history grows (:func:`steady_store_lines`).
"""

from __future__ import annotations

import math
import random
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import IO, Any

META = "turnstate_app_checkpointmetadata"
PAUSE = "turnstate_app_pause"
META_COLUMNS = (
    "thread_id",
    "checkpoint_id",
    "key",
    "value",
    "value_mac",
    "task_id",
    "created_at",
    "updated_at",
)
PAUSE_COLUMNS = (
    "jti",
    "run_id",
    "session_id",
    "thread_id",
    "checkpoint_id",
    "scope_hash",
    "tool_call_id",
    "name",
    "request_key",
    "resumable",
    "status",
    "owner_id",
    "created_at",
    "answered_at",
    "expires_at",
    "handed_off_at",
    "answer_schema",
    "group",
    "agent",
    "shown_digest",
    "continuation",
    "continuation_since",
    "continuation_reason",
    "continuation_attempts",
    "continuation_retry_at",
)

DAY = 86400.0
HISTORY_DAYS = 90
"""How far back the store reaches: pauses are minted evenly over this many days."""
MAX_AGE = 7 * DAY
"""A token's life (``TOKEN_MAX_AGE``'s default)."""
PAUSES_PER_ROW = 0.153
"""Pauses per store row: 1.5k, 153k, 1.5M pauses at 10k, 1M, 10M rows."""
OWNERS = 50
"""People who answer; 70% of pauses have one of them as owner, the rest are unowned."""
STEADY_DAYS = 14
"""Under steady traffic, the recent part of the store: the slots minted in these last days are the
same at every size. Longer than a token's life (7 days) and the two days an expired pause may
still read pending, so every pause an operator can still act on lies in it."""
STEADY_REFERENCE_ROWS = 10_000
"""Under steady traffic, the size whose recent slots every size holds (the first default size)."""

# What a slot is: one pause, a group of two or three (one run, one thread), or a request row that
# no ledger pause owns (written by an older build). Of the single pauses, LOST have no turn state
# (the record failed at mint): with the legacy rows, the store's 1% of unresumable pauses.
SLOT_WEIGHTS = {"single": 0.925, "pair": 0.05, "triple": 0.02, "legacy": 0.005}
LOST = 0.005

# How people answer: a tenth of the questions are never answered; the others after a delay
# (median 10 minutes, a long tail of days: past MAX_AGE the pause expires unanswered). Of a
# group, most are answered whole or not at all; PARTIAL have some members answered and the rest
# never (the run will never continue: a failed group whose answered members stay queued).
NEVER = 0.10
PARTIAL = 0.02
MEDIAN_DELAY = 600.0
UNMARKED_FOR = 2 * DAY
"""Pauses that passed ``expires_at`` less than this long ago still read ``pending``: the host's
``turnstate_expire`` runs every few days and has not marked them yet; older ones read ``expired``."""

# Where an answered run's continuation stands: a few hundred per million store rows in each
# state an operator is paged on (per answered slot; about 130k of them per million rows), the
# rest continued. queued and running are recent (a worker's queue, runs of a few minutes);
# the others accumulate over the 90 days, as nobody has acted on them yet.
CONTINUATION_WEIGHTS = {
    "awaiting_handoff": 0.0022,
    "queued": 0.0012,
    "running": 0.0016,
    "stalled": 0.0022,
    "failed": 0.0022,
    "crashed": 0.0015,
    "refused": 0.0022,
}
RUNNING_WINDOW = 180.0
"""Running continuations were claimed at most this many seconds before the seed's end (so they
stay running, not stalled, through the measurements: ``STALLED_AFTER`` is 15 minutes)."""
QUEUED_WINDOW = 600.0

REASONS = {
    "awaiting_handoff": "RESUME_HANDLER did not return within 5 s (HANDOFF_TIMEOUT)",
    "failed": "ImportError: No module named 'booking_agent' (AGENTS['booking'])",
    "crashed": "RuntimeError: the booking service answered 502",
    "refused": "the question changed since it was asked",
}
REQUEST = '{"question":"Which date suits you?","options":["the 14th","the 15th"]}'
TURN_STATE = (
    '{"format":1,"prompt":"Book the cheapest flight.","messages":[{"role":"user","content":'
    '"Book a flight to Lisbon next week."},{"role":"assistant","content":"Which date suits you?"}]}'
)
ANSWER = '"the 14th"'
CHANNEL_VALUES = '{"messages":[{"role":"assistant","content":"Looking up flights."}],"step":3}'
SCHEMA = '{"type":"string","enum":["the 14th","the 15th"]}'
NULL = "\\N"

for _text in (*REASONS.values(), REQUEST, TURN_STATE, ANSWER, CHANNEL_VALUES, SCHEMA):
    if any(c in _text for c in "\t\n\r\\"):  # COPY's text format would read these as escapes
        raise ValueError(f"seed text needs escaping: {_text!r}")


@dataclass
class Member:
    """One ledger row of a slot, its times in seconds since the epoch."""

    index: int
    created: float
    status: str = "pending"
    answered: float | None = None
    lost: bool = False
    continuation: str | None = None
    since: float | None = None
    handed_off: float | None = None
    reason: str | None = None
    attempts: int = 0
    retry_at: float | None = None


@dataclass
class Shape:
    """What a seed wrote, for the report."""

    store_rows: int = 0
    pauses: int = 0
    groups: int = 0
    legacy_requests: int = 0
    lost_turn_states: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    continuations: Counter[str] = field(default_factory=Counter)
    slots: int = 0
    parts: dict[str, Shape] = field(default_factory=dict)
    """Under steady traffic: the same tallies for the recent slots and for history."""

    def as_dict(self) -> dict[str, Any]:
        shape: dict[str, Any] = {
            "store_rows": self.store_rows,
            "pauses": self.pauses,
            "groups": self.groups,
            "legacy_requests": self.legacy_requests,
            "lost_turn_states": self.lost_turn_states,
            "statuses": dict(sorted(self.statuses.items())),
            "continuations": dict(sorted(self.continuations.items())),
        }
        if self.parts:
            shape["steady_traffic"] = {"steady_days": STEADY_DAYS} | {
                name: {"slots": part.slots} | part.as_dict() for name, part in self.parts.items()
            }
        return shape


def stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat()


def opt(seconds: float | None) -> str:
    return NULL if seconds is None else stamp(seconds)


def answer_delay(rng: random.Random) -> float:
    return rng.lognormvariate(0.0, 1.6) * MEDIAN_DELAY


def plan_slot(rng: random.Random, now: float, *, history: bool = False) -> tuple[str, list[Member]]:
    """One slot's kind and its members, with their states at ``now``.

    ``history``: minted ``STEADY_DAYS`` to ``HISTORY_DAYS`` ago and settled, nothing left for an
    operator: never answered (expired), or answered and continued; a group is always answered
    whole (a member expired unanswered would leave the group failed for good).
    """
    kind = rng.choices(list(SLOT_WEIGHTS), list(SLOT_WEIGHTS.values()))[0]
    if history:
        created = now - rng.uniform(STEADY_DAYS * DAY, HISTORY_DAYS * DAY)
    else:
        created = now - rng.uniform(0, HISTORY_DAYS * DAY)
    if kind == "legacy":
        return kind, [Member(0, created)]
    size = {"single": 1, "pair": 2, "triple": 3}[kind]
    members = [Member(m, created + m * rng.uniform(0, 2)) for m in range(size)]
    if kind == "single" and rng.random() < LOST / SLOT_WEIGHTS["single"]:
        members[0].lost = True  # nobody answers it: nothing can continue
        if created + MAX_AGE + UNMARKED_FOR <= now:
            members[0].status = "expired"
        return kind, members
    roll = rng.random()
    answering = [] if roll < NEVER else members[:1] if size > 1 and roll < NEVER + PARTIAL else members
    if history and size > 1:
        answering = members
    for member in answering:
        delay = answer_delay(rng)
        if delay < MAX_AGE:
            member.answered = member.created + delay
    if history and size > 1:  # whoever answered answers for the rest too
        answers = [m.answered for m in members if m.answered is not None]
        last_answer = max(answers, default=members[-1].created + MEDIAN_DELAY)
        for member in members:
            member.answered = last_answer if member.answered is None else member.answered
    for member in members:
        if member.answered is not None and member.answered > now:
            member.answered = None  # not yet: still pending
    answered = [m for m in members if m.answered is not None]
    for member in members:
        if member.answered is not None:
            member.status = "answered"
        elif member.created + MAX_AGE + UNMARKED_FOR <= now:
            member.status = "expired"
    if not answered:
        return kind, members
    if len(answered) < size:  # the rest of the group not answered (yet, or ever): waiting
        for member in answered:
            assert member.answered is not None
            queue(member, member.answered, member.answered + rng.uniform(0.02, 0.3))
        return kind, members
    state = "continued" if history else continuation_state(rng)
    last = max(m.answered or 0.0 for m in members)
    if state in ("queued", "running"):  # recent: move the slot so its last answer lands then
        target = now - rng.uniform(0, QUEUED_WINDOW if state == "queued" else RUNNING_WINDOW)
        shift = target - last
        for member in members:
            member.created += shift
            member.answered = None if member.answered is None else member.answered + shift
        last = target
    for member in members:
        assert member.answered is not None
        queue(member, member.answered, member.answered + rng.uniform(0.02, 0.3))
    if state == "awaiting_handoff":
        lead = max(members, key=lambda m: m.answered or 0.0)
        lead.handed_off, lead.reason = None, REASONS[state]
        return kind, members
    if state == "queued":
        return kind, members
    claimed = min(now, last + rng.uniform(0.1, 3))
    if state == "running":
        claimed = last
    for member in members:
        member.continuation, member.since, member.attempts = "running", claimed, 1
    if state in ("running", "stalled"):
        return kind, members
    ended = min(now, claimed + rng.uniform(1, 90))
    for member in members:
        member.since = ended
        if state == "continued":
            member.continuation = "continued"
        elif state == "failed":
            member.continuation, member.reason = "failed", REASONS[state]
            if rng.random() < 0.8:  # CONTINUATION_ATTEMPTS spent: only an operator hands it again
                member.attempts = 3
            else:
                member.attempts = rng.choice((1, 2))
                member.retry_at = ended + 30 * 4 ** (member.attempts - 1)
        else:
            member.continuation, member.reason = state, REASONS[state]
            member.attempts = 0 if state == "refused" and rng.random() < 0.5 else 1
    return kind, members


def queue(member: Member, answered: float, handed_off: float) -> None:
    member.continuation, member.since, member.handed_off = "queued", answered, handed_off


def continuation_state(rng: random.Random) -> str:
    roll = rng.random()
    for state, weight in CONTINUATION_WEIGHTS.items():
        if roll < weight:
            return state
        roll -= weight
    return "continued"


def slot_rng(seed: int, slot: int) -> random.Random:
    return random.Random((seed << 32) | slot)


def meta_line(thread: str, checkpoint: str, key: str, value: str, task: str, at: float) -> str:
    """A clear store row as the port writes it, its MAC included (else the app would not read it)."""
    from turnstate_app.ports.sealing import value_mac

    when = stamp(at)
    mac = value_mac(thread, checkpoint, key, value, None)
    return f"{thread}\t{checkpoint}\t{key}\t{value}\t{mac}\t{task}\t{when}\t{when}\n"


def slot_rows(
    slot: int, kind: str, members: list[Member], owner_ids: list[int], rng: random.Random
) -> tuple[list[str], list[str]]:
    """The store's rows and the ledger's rows of one slot, as COPY text lines."""
    thread, checkpoint, run = f"thread-{slot}", f"cp-{slot}", f"run-{slot}"
    if kind == "legacy":
        key = f"interrupt_payload:int-{slot}"
        return [meta_line(thread, checkpoint, key, "{}", NULL, members[0].created)], []
    group = f"group-{slot}" if len(members) > 1 else NULL
    owner = str(rng.choice(owner_ids)) if owner_ids and rng.random() < 0.7 else NULL
    schema = SCHEMA if rng.random() < 0.3 else NULL
    session = f"session-{slot % 20011}"
    meta, ledger = [], []
    for m in members:
        jti, call = f"jti-{slot:09d}-{m.index}", f"call-{slot}-{m.index}"
        request_key = f"ask_user_request:{call}"
        meta.append(meta_line(thread, checkpoint, request_key, REQUEST, run, m.created))
        if not m.lost:
            meta.append(meta_line(thread, checkpoint, f"turn_state:{jti}", TURN_STATE, run, m.created))
        if m.answered is not None:
            meta.append(meta_line(thread, checkpoint, f"answer:{jti}", ANSWER, run, m.answered))
        fields = (
            jti,
            run,
            session,
            thread,
            checkpoint,
            "scope",
            call,
            "ask_user",
            request_key,
            "f" if m.lost else "t",
            m.status,
            owner,
            stamp(m.created),
            opt(m.answered),
            stamp(m.created + MAX_AGE),
            opt(m.handed_off),
            schema,
            group,
            "booking",
            f"{slot:064x}",
            m.continuation or NULL,
            opt(m.since),
            m.reason or NULL,
            str(m.attempts),
            opt(m.retry_at),
        )
        ledger.append("\t".join(fields) + "\n")
    return meta, ledger


def other_line(thread_slot: int, k: int, at: float) -> str:
    """A row the checkpointer keeps beside the pauses, in the same thread."""
    return meta_line(
        f"thread-{thread_slot}", f"cp-{thread_slot}-{k % 5}", f"channel_values:{k}", CHANNEL_VALUES, NULL, at
    )


def recent_other_line(slot: int, j: int, at: float) -> str:
    """The ``j``-th other row of a recent slot under steady traffic: named by the slot alone, so it
    is the same row at every size."""
    return meta_line(
        f"thread-{slot}", f"cp-{slot}-{j % 5}", f"channel_values:recent-{j}", CHANNEL_VALUES, NULL, at
    )


def own_rows(kind: str, members: list[Member]) -> int:
    """The store rows a slot's pauses write themselves (request, turn state unless lost, answer)."""
    if kind == "legacy":
        return len(members)
    return sum(1 + (not m.lost) + (m.answered is not None) for m in members)


def slot_count(n_rows: int) -> int:
    """The slots of a store of ``n_rows`` rows."""
    mean_members = sum(w * n for w, n in zip(SLOT_WEIGHTS.values(), (1, 2, 3, 0), strict=True))
    return max(1, round(n_rows * PAUSES_PER_ROW / mean_members))


def others_rate(n_rows: int, slots: int, seed: int, now: float, *, history: bool = False) -> float:
    """Rows a slot writes beside its pauses' own, estimated from a sample so the total lands on n_rows."""
    sample = [plan_slot(slot_rng(seed + 1, s), now, history=history) for s in range(2000)]
    own = sum(own_rows(kind, ms) for kind, ms in sample) / len(sample)
    return max(0.0, n_rows / slots - own)


def seed_store(
    n_rows: int,
    seed: int,
    owner_ids: list[int],
    *,
    steady_traffic: bool = False,
    reference_rows: int = STEADY_REFERENCE_ROWS,
) -> dict[str, Any]:
    """About ``n_rows`` store rows (exactly, unless the pauses' own rows exceed it) and
    ``n_rows * PAUSES_PER_ROW`` pauses, as 90 days of use leave them (see the constants above);
    with ``steady_traffic``, as :func:`steady_store_lines` lays them out.

    The store's rows are in an order unrelated to their age, as after months of writes, purges
    and reuse of free space; each slot's rows lie together.
    """
    from django.db import connection, transaction

    started = time.time()
    shape = Shape()
    with (
        tempfile.TemporaryFile("w+", encoding="utf-8") as ledger_file,
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(f'TRUNCATE "{META}", "{PAUSE}" RESTART IDENTITY')
        if steady_traffic:
            lines = steady_store_lines(n_rows, seed, owner_ids, started, shape, ledger_file, reference_rows)
        else:
            lines = store_lines(n_rows, seed, owner_ids, started, shape, ledger_file)
        copy_text(cursor, META, META_COLUMNS, lines)
        ledger_file.seek(0)
        copy_text(cursor, PAUSE, PAUSE_COLUMNS, ledger_file)
        reanchor_running(started)
    return shape.as_dict() | {"seed_started": stamp(started)}


def store_lines(
    n_rows: int, seed: int, owner_ids: list[int], now: float, shape: Shape, ledger_file: IO[str]
) -> Iterator[str]:
    """The store's COPY lines, one slot at a time in the ``scattered`` order, its ledger lines
    written to ``ledger_file``, each slot's rows tallied into ``shape``."""
    slots = slot_count(n_rows)
    others_per_slot = others_rate(n_rows, slots, seed, now)
    due, k = 0.0, 0
    for slot in scattered(slots, seed):
        rng = slot_rng(seed, slot)
        kind, members = plan_slot(rng, now)
        meta, ledger = slot_rows(slot, kind, members, owner_ids, rng)
        tally(shape, kind, members)
        ledger_file.writelines(ledger)
        yield from meta
        due += others_per_slot
        while due >= 1:
            yield other_line(slot, k, now - rng.uniform(0, HISTORY_DAYS * DAY))
            due, k = due - 1, k + 1
    filler = random.Random(seed + 2)
    while shape.store_rows + k < n_rows:  # the estimate's shortfall, in random threads
        yield other_line(filler.randrange(slots), k, now - filler.uniform(0, HISTORY_DAYS * DAY))
        k += 1
    shape.store_rows += k


def recent_slots(seed: int, now: float, reference_slots: int) -> set[int]:
    """The slots of the reference size minted in the last ``STEADY_DAYS`` (a queued or running
    continuation moves its slot to now): a few hundred numbers, whatever the size."""
    horizon = now - STEADY_DAYS * DAY
    return {s for s in range(reference_slots) if plan_slot(slot_rng(seed, s), now)[1][0].created >= horizon}


def steady_store_lines(
    n_rows: int,
    seed: int,
    owner_ids: list[int],
    now: float,
    shape: Shape,
    ledger_file: IO[str],
    reference_rows: int = STEADY_REFERENCE_ROWS,
) -> Iterator[str]:
    """:func:`store_lines` under steady traffic: the same traffic at every size, more history.

    The recent part is the slots the reference size (``reference_rows``) mints in the last
    ``STEADY_DAYS``: the same slot numbers, each from its own generator, so the same rows at every
    size (their other rows too, placed in those days and named by the slot). Every other slot is
    history (``plan_slot(history=True)``): minted ``STEADY_DAYS`` to ``HISTORY_DAYS`` ago and
    settled, continued or (never answered) expired; its lost turn states and request rows no
    pause owns stay, as no list shows them any more (expired, or past ``TOKEN_MAX_AGE``). So
    every figure and every list of what an operator can act on counts the same rows at each size;
    the other rows of history and the estimate's shortfall fill the rest, in history's threads
    and days. The slots' order is ``scattered``, as without steady traffic.
    """
    slots, reference = slot_count(n_rows), slot_count(reference_rows)
    if slots < reference:
        raise ValueError(f"steady traffic needs at least the reference size's {reference_rows} store rows")
    recent = recent_slots(seed, now, reference)
    history_slots = slots - len(recent)
    if not history_slots:
        raise ValueError("steady traffic: every slot is recent, no history to grow")
    recent_others = others_rate(reference_rows, reference, seed, now)
    recent_own = sum(own_rows(*plan_slot(slot_rng(seed, s), now)) for s in recent)
    expected_recent = recent_own + len(recent) * recent_others
    history_others = others_rate(n_rows - round(expected_recent), history_slots, seed, now, history=True)
    shape.parts = {"recent": Shape(), "history": Shape()}
    due, k = 0.0, 0
    for slot in scattered(slots, seed):
        rng = slot_rng(seed, slot)
        is_recent = slot in recent
        kind, members = plan_slot(rng, now, history=not is_recent)
        meta, ledger = slot_rows(slot, kind, members, owner_ids, rng)
        part = shape.parts["recent" if is_recent else "history"]
        part.slots += 1
        tally(shape, kind, members)
        tally(part, kind, members)
        ledger_file.writelines(ledger)
        yield from meta
        if is_recent:
            count = int(recent_others) + (rng.random() < recent_others % 1)
            for j in range(count):
                yield recent_other_line(slot, j, now - rng.uniform(0, STEADY_DAYS * DAY))
            shape.store_rows += count
            part.store_rows += count
            continue
        due += history_others
        while due >= 1:
            yield other_line(slot, k, now - rng.uniform(STEADY_DAYS * DAY, HISTORY_DAYS * DAY))
            due, k = due - 1, k + 1
    filler = random.Random(seed + 2)
    while shape.store_rows + k < n_rows:  # the estimate's shortfall, in history's threads
        thread = filler.randrange(slots)
        if thread not in recent:
            yield other_line(thread, k, now - filler.uniform(STEADY_DAYS * DAY, HISTORY_DAYS * DAY))
            k += 1
    shape.store_rows += k
    shape.parts["history"].store_rows += k


def reanchor_running(started: float) -> int:
    """Move the running continuations' claims forward by the time seeding took, so they read as
    claimed shortly before the measurements, not as stalled by then; how many moved."""
    from django.db.models import F

    from turnstate_app.models import Pause

    shift = timedelta(seconds=time.time() - started)
    at = datetime.fromtimestamp(started, UTC)
    return Pause.objects.running(at).update(continuation_since=F("continuation_since") + shift)


def scattered(count: int, seed: int) -> Iterator[int]:
    """``0 … count - 1``, each once, in an order unrelated to their value, computed one at a time
    (``i -> (a * i + b) mod count`` with ``a`` prime to ``count``): at 10M store rows a shuffled
    list of the 1.5M slots would hold about 60 MB for the whole seeding."""
    rng = random.Random(seed)
    if count < 3:
        yield from range(count)
        return
    step = rng.randrange(count // 3, count)
    while math.gcd(step, count) != 1:
        step += 1
    start = rng.randrange(count)
    for i in range(count):
        yield (start + step * i) % count


def tally(shape: Shape, kind: str, members: list[Member]) -> None:
    shape.store_rows += own_rows(kind, members)
    if kind == "legacy":
        shape.legacy_requests += 1
        return
    shape.pauses += len(members)
    shape.groups += len(members) > 1
    for m in members:
        shape.lost_turn_states += m.lost
        shape.statuses[m.status] += 1
        if m.continuation is not None:
            shape.continuations[m.continuation] += 1


def copy_text(cursor: Any, table: str, columns: tuple[str, ...], lines: Iterator[str] | IO[str]) -> None:
    """Stream COPY text lines to ``table`` in chunks (FREEZE: the rows are written visible to
    all, as long-settled rows are; the table was truncated in this transaction)."""
    names = ", ".join(f'"{c}"' for c in columns)
    with cursor.connection.cursor() as raw, raw.copy(f'COPY "{table}" ({names}) FROM STDIN (FREEZE)') as copy:
        chunk: list[str] = []
        for line in lines:
            chunk.append(line)
            if len(chunk) >= 5000:
                copy.write("".join(chunk))
                chunk.clear()
        if chunk:
            copy.write("".join(chunk))


def seed_purgeable(n_rows: int, seed: int) -> dict[str, int]:
    """``n_rows`` store rows of old answered, continued pauses (request, turn state, answer:
    three each), and 1% more pauses still pending, whose rows the purge must keep."""
    from django.db import connection, transaction

    now = time.time()
    pauses = n_rows // 3
    keep = pauses // 100

    def slot(i: int) -> tuple[list[str], list[str]]:
        rng = slot_rng(seed, i)
        member = Member(0, now - (60 + rng.uniform(0, 30)) * DAY)
        if i < pauses:
            member.status, member.answered = "answered", member.created + 300
            queue(member, member.created + 300, member.created + 300.1)
            member.continuation, member.since, member.attempts = "continued", member.created + 330, 1
        return slot_rows(i, "single", [member], [], rng)

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f'TRUNCATE "{META}", "{PAUSE}" RESTART IDENTITY')
        copy_text(cursor, META, META_COLUMNS, (line for i in range(pauses + keep) for line in slot(i)[0]))
        copy_text(cursor, PAUSE, PAUSE_COLUMNS, (line for i in range(pauses + keep) for line in slot(i)[1]))
    return {"purgeable_rows": pauses * 3, "purgeable_pauses": pauses, "kept_pauses": keep}


def seed_owners(count: int = OWNERS) -> list[int]:
    """The people pauses belong to (created once per database)."""
    from django.contrib.auth import get_user_model

    users = get_user_model()
    names = [f"person-{i}" for i in range(count)]
    existing = set(users.objects.filter(username__in=names).values_list("username", flat=True))
    users.objects.bulk_create([users(username=n) for n in names if n not in existing])
    return sorted(users.objects.filter(username__in=names).values_list("pk", flat=True))
