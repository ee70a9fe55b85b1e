"""Each paused run's latest state: one row, replaced only at the revision it was read at.

The SDK takes partial answers, and a run continued with some of its approvals stops again
with a *new* state, so the row is the run's latest state, not a snapshot per pause. Every
write names the revision it replaces (compare-and-set, one conditional ``UPDATE``): a
writer that read an older state writes nothing and is told so (``StaleRunStateError``).
The text goes through :mod:`~turnstate_app.contrib.openai_agents.codec`: with keys configured it
is encrypted with the keys of the row's ``thread_id`` (the thread the run's pauses are minted
on), its key id and its MAC written in the same statement. The MAC names the row's run, thread
and revision, so a state read back is the one this app wrote at that revision: the continuation
compares the revision with the one its pauses were minted at (under their own MAC), which binds
the run to exactly the state its pauses showed. A state that fails its MAC or does not decrypt is
refused with ``UnreadableRunStateError``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db import IntegrityError, router, transaction

from turnstate_app.contrib.openai_agents.codec import decode_state, encode_state
from turnstate_app.contrib.openai_agents.errors import StaleRunStateError, UnreadableRunStateError
from turnstate_app.contrib.openai_agents.models import StoredRunState


@dataclass(frozen=True)
class StoredState:
    """A run's state as read: its revision, and the text ``RunState.from_string`` takes."""

    run_id: str
    thread_id: str
    session_id: str | None
    agent: str
    revision: str
    schema_version: str
    text: str


def _alias(using: str | None) -> str:
    # The primary: a revision read from a lagging replica would refuse every write.
    return using or router.db_for_write(StoredRunState)


def new_revision() -> str:
    return uuid.uuid4().hex


def insert_state(
    *,
    run_id: str,
    thread_id: str,
    session_id: str | None,
    agent: str,
    schema_version: str,
    text: str,
    using: str | None = None,
    savepoint: bool = True,
) -> str:
    """Store a run's first state; its revision. ``ValueError`` when the run has one already.

    ``savepoint``: a taken run id leaves the caller's transaction usable. False for a caller whose
    transaction rolls back whole on that error anyway (the savepoint would cost two statements)."""
    revision = new_revision()
    alias = _alias(using)
    state, key_id, mac = encode_state(text, run_id=run_id, thread_id=thread_id, revision=revision)
    row = StoredRunState(
        run_id=run_id,
        thread_id=thread_id,
        session_id=session_id,
        agent=agent,
        revision=revision,
        schema_version=schema_version,
        state=state,
        encryption_key_id=key_id,
        value_mac=mac,
    )
    try:
        with transaction.atomic(using=alias, savepoint=savepoint):
            row.save(using=alias, force_insert=True)
    except IntegrityError:
        raise ValueError(
            f"run {run_id!r} has a stored state already; each paused run needs its own run_id "
            "(its later stops are paused by continue_run)"
        ) from None
    return revision


def read_state(run_id: str, *, using: str | None = None) -> StoredState | None:
    """The run's latest state, or None when none is stored; ``UnreadableRunStateError`` when it fails
    its MAC or does not decrypt (altered at rest, or its thread's key is gone)."""
    row = (
        StoredRunState.objects.using(_alias(using))
        .filter(run_id=run_id)
        .values_list(
            "thread_id",
            "session_id",
            "agent",
            "revision",
            "schema_version",
            "state",
            "encryption_key_id",
            "value_mac",
        )
        .first()
    )
    if row is None:
        return None
    thread_id, session_id, agent, revision, schema_version, state, key_id, mac = row
    text = decode_state(state, key_id, mac, run_id=run_id, thread_id=thread_id, revision=revision)
    require_session_of_thread(run_id, thread_id, session_id)
    return StoredState(run_id, thread_id, session_id, agent, revision, schema_version, text)


def require_session_of_thread(run_id: str, thread_id: str, session_id: str | None) -> None:
    """``UnreadableRunStateError`` unless the row's session is its thread (its run's, without one).

    The thread is under the row's MAC and a run's thread is its session's id when it has one, so a
    session that is not the thread was changed at rest: the run would go on in another conversation.
    """
    if session_id == thread_id or (session_id is None and thread_id == run_id):
        return
    raise UnreadableRunStateError(
        f"the stored state of run {run_id!r} names session {session_id!r}, and its thread is "
        f"{thread_id!r}: the session was changed at rest; it is an unreadable record and is not used"
    )


def replace_state(
    run_id: str,
    text: str,
    *,
    expected_revision: str,
    schema_version: str | None = None,
    thread_id: str | None = None,
    using: str | None = None,
) -> str:
    """Replace the run's state if it is still at ``expected_revision``; the new revision.

    ``thread_id``: the row's thread (``StoredState.thread_id``), whose keys encrypt the text; the
    write is then one ``UPDATE``. Without it, the row's thread is read first (one ``SELECT`` more).
    ``StaleRunStateError`` (nothing written) when the row is at another revision, of another
    thread, or gone.
    """
    alias = _alias(using)
    rows = StoredRunState.objects.using(alias).filter(run_id=run_id, revision=expected_revision)
    if thread_id is None:
        thread_id = rows.values_list("thread_id", flat=True).first()
    revision = new_revision()
    if thread_id is not None:
        state, key_id, mac = encode_state(text, run_id=run_id, thread_id=thread_id, revision=revision)
        fields = {"state": state, "encryption_key_id": key_id, "value_mac": mac, "revision": revision}
        if schema_version is not None:
            fields["schema_version"] = schema_version
        if rows.filter(thread_id=thread_id).update(**fields) == 1:
            return revision
    raise StaleRunStateError(
        f"the state of run {run_id!r} is no longer at revision {expected_revision!r} "
        "(written again, or erased, since it was read); nothing was written"
    )
