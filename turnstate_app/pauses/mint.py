"""Minting a pause: the request, the turn state, the ledger row, then the token.

The order is the point. ``resumable`` is what recording the turn state *reported*,
read after the write; a failed record still yields a token (the person can still
answer) but one that says it cannot be continued.

On the model port, when the store's rows and the ledger live in one database, the three
writes commit together in one transaction, so no request or turn-state row is ever
visible without its ledger row (a purge or an operator never meets half a pause), and
the token is signed only after the commit. Only the turn state's write has a savepoint
of its own: its failure is the one a mint survives (``resumable=False``); a failed
request or ledger write rolls the whole mint back. Any other port keeps the same order,
write by write, through the port.

``pause_minted`` and ``NOTIFY`` run once the mint is committed (with the caller's transaction,
when the caller holds one): nobody is told of a pause that a rollback took back.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.db import OperationalError, connections, router, transaction
from django.utils import timezone

from turnstate_app import telemetry
from turnstate_app.conf import conf
from turnstate_app.contracts import PauseClaims
from turnstate_app.errors import CheckpointFieldError
from turnstate_app.keys import payload_key
from turnstate_app.managers import new_pause
from turnstate_app.models import Pause
from turnstate_app.notify import notify_minted
from turnstate_app.pauses.answers import check_schema
from turnstate_app.pauses.binding import identity_of, shown_mac
from turnstate_app.pauses.earned import ResumableCheck, earned
from turnstate_app.pauses.groups import check_group
from turnstate_app.pauses.shown import digest_at_mint
from turnstate_app.pauses.signals import pause_minted
from turnstate_app.pauses.tokens import sign_claims
from turnstate_app.ports import ModelCheckpointCommandPort, get_default_store
from turnstate_app.ports.conflicts import is_serialization_failure
from turnstate_app.ports.ledger import insert_pause
from turnstate_app.ports.limits import require_id
from turnstate_app.ports.model import whole_transaction_writes
from turnstate_app.turnstate import TurnCheckpoint, TurnCheckpointStore, stamped_turn

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class MintedPause:
    token: str
    claims: PauseClaims
    resumable: bool


def new_jti() -> str:
    """192 random bits, URL-safe: unguessable, and unique per mint."""
    return secrets.token_urlsafe(24)


def to_json(field: str, value: Any) -> str:
    """Serialise what the store will hold, refusing before anything is written."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise CheckpointFieldError(field, f"is not JSON-serialisable ({exc})") from None


def mint_pause(
    *,
    run_id: str,
    session_id: str,
    thread_id: str,
    checkpoint_id: str,
    scope_hash: str,
    tool_call_id: str | None = None,
    interrupt_id: str | None = None,
    name: str | None = None,
    request: dict[str, Any],
    prompt: str,
    messages: list[dict[str, Any]],
    owner: Any = None,
    store: TurnCheckpointStore | None = None,
    answer_schema: dict[str, Any] | None = None,
    group: str | None = None,
    resumable_check: ResumableCheck | None = None,
    agent: str | None = None,
    shown: Any = None,
) -> MintedPause:
    """Record a pause and return its single-use token.

    ``agent``: the name of the graph or agent that paused; ``continue_once`` then refuses
    any other before claiming anything. ``shown``: what the person is shown (JSON; default:
    ``request``); a MAC of its digest (keyed from ``SECRET_KEY``) is recorded, and
    ``continue_once(..., still_shown=...)`` runs nothing when the stored state no longer asks
    exactly that. A failed request write or ledger write raises and returns no token; a failed
    turn-state record returns a token with ``resumable=False``.
    """
    store = store if store is not None else get_default_store()
    answer_schema = check_schema(answer_schema)
    group = check_group(group, thread_id)
    if agent is not None:
        require_id("agent", agent)
    claims = PauseClaims(
        jti=new_jti(),
        run_id=run_id,
        session_id=session_id,
        thread_id=thread_id,
        checkpoint_id=checkpoint_id,
        scope_hash=scope_hash,
        tool_call_id=tool_call_id,
        interrupt_id=interrupt_id,
        name=name,
    )
    request_key = payload_key(claims)
    request_value = to_json("request", request)
    digest = shown_mac(identity_of(claims), digest_at_mint(request if shown is None else shown))
    turn = stamped_turn(TurnCheckpoint.model_construct(prompt=prompt, messages=messages), claims)
    try:
        encoded = turn.encode()  # a transcript that cannot be stored is the caller's bug: say so now
    except (TypeError, ValueError) as exc:
        raise CheckpointFieldError("messages", f"are not JSON-serialisable ({exc})") from None

    ledger_fields = {
        "request_key": request_key,
        "owner": owner,
        "answer_schema": answer_schema,
        "group": group,
        "agent": agent,
        "shown_digest": digest,
    }
    with telemetry.span(
        "turnstate.mint", jti=claims.jti, thread_id=thread_id, run_id=run_id, group=group, agent=agent
    ) as current:
        resumable, pause = write_minted(
            store, claims, request_value, turn, encoded, ledger_fields, resumable_check
        )
        telemetry.outcome(current, "minted", resumable=resumable)
    telemetry.record("turnstate.pauses.minted")
    if not resumable:
        logger.warning(
            "pause %s in thread %s was minted without a recorded turn state: the question can "
            "be answered, the run cannot be continued from this store",
            claims.jti,
            thread_id,
        )
    minted = MintedPause(token=sign_claims(claims), claims=claims, resumable=resumable)
    alias = router.db_for_write(Pause)
    transaction.on_commit(lambda: announce(minted, pause), using=alias)
    if conf.NOTIFY is not None:  # after the commit: a person never follows a link to nothing
        if owner is not None:
            pause.owner = owner  # the person to tell, without reading the user again
        transaction.on_commit(lambda: notify_minted(pause, minted.token), using=alias)
    return minted


def write_minted(
    store: TurnCheckpointStore,
    claims: PauseClaims,
    request_value: str,
    turn: TurnCheckpoint,
    encoded: str,
    ledger_fields: dict[str, Any],
    resumable_check: ResumableCheck | None,
) -> tuple[bool, Pause]:
    """The writes of a mint, in one transaction on the ledger's database when the store shares it."""
    # The ledger row's own fields (its identity comes from the claims; ``resumable`` from the record).
    ledger = {**ledger_fields, "expires_at": timezone.now() + timedelta(seconds=conf.TOKEN_MAX_AGE)}
    rows = (store, claims, request_value, turn, encoded, ledger)
    alias = shared_alias(store)
    if alias is None:
        return write_pause(*rows, resumable_check=resumable_check)
    return in_one_transaction(
        alias, lambda: write_pause(*rows, resumable_check=resumable_check, own_transaction=True)
    )


def write_pause(
    store: TurnCheckpointStore,
    claims: PauseClaims,
    request_value: str,
    turn: TurnCheckpoint,
    encoded: str,
    ledger: dict[str, Any],
    resumable_check: ResumableCheck | None = None,
    *,
    own_transaction: bool = False,
) -> tuple[bool, Pause]:
    """The contract's three writes, in order: the request, the turn state, the ledger row.

    ``own_transaction``: they run in the mint's own transaction, which a failed request write
    rolls back whole, so that write needs no savepoint of the port's.
    """
    if store.wired:
        with whole_transaction_writes() if own_transaction else nullcontext():
            store.write_request_sync(claims, request_value)
    # Inside a transaction the model port writes in a savepoint: a refused record rolls
    # back alone, and the pause is still minted, saying it is not resumable.
    resumable = earned(store.record_sync(claims, turn, encoded=encoded), resumable_check, claims)
    pause = new_pause(Pause, claims, resumable=resumable, **ledger)
    return resumable, insert_pause(pause, using=router.db_for_write(Pause, instance=pause))


MINT_ATTEMPTS = 3
"""A mint that the database refused for a concurrent transaction (a deadlock with a purge of
the same request row, say) wrote nothing, so it is tried again, as a whole."""


def in_one_transaction(alias: str, write: Callable[[], tuple[bool, Pause]]) -> tuple[bool, Pause]:
    """Run ``write`` in one transaction on ``alias``; retried on a conflict unless the caller holds
    the transaction (then the conflict is the caller's to handle)."""
    retry = not connections[alias].in_atomic_block
    for attempt in range(1, MINT_ATTEMPTS + 1):
        try:
            with transaction.atomic(using=alias):
                return write()
        except OperationalError as exc:
            if not (retry and attempt < MINT_ATTEMPTS and is_serialization_failure(exc)):
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def shared_alias(store: TurnCheckpointStore) -> str | None:
    """The database in which the store's rows and the ledger commit together, if there is one."""
    commands = store.commands
    if not isinstance(commands, ModelCheckpointCommandPort):
        return None
    ledger = router.db_for_write(Pause)
    return ledger if commands.write_alias() == ledger else None


def announce(minted: MintedPause, pause: Pause) -> None:
    """Send ``pause_minted``; a failing receiver is logged, never raised: the token is already out."""
    for receiver, result in pause_minted.send_robust(sender=Pause, minted=minted, pause=pause):
        if isinstance(result, Exception):
            logger.error(
                "pause_minted receiver %r failed for pause %s: %s",
                receiver,
                minted.claims.jti,
                telemetry.described(result),
            )


async def amint_pause(**kwargs: Any) -> MintedPause:
    """:func:`mint_pause` for async code: one thread hop over the whole of it."""
    return await sync_to_async(mint_pause, thread_sensitive=True)(**kwargs)
