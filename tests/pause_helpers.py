"""Pauses in every state a test meets: minted, answered, lost, legacy, aged.

Pause ``n`` lives in ``thread-<n>`` with run ``run-<n>`` and tool call ``call-<n>``; the rest
of its identity is :class:`~tests.factories.PauseClaimsFactory`'s. Leave ``n`` out and the
pause takes the factories' next number, which no other pause of the run shares.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from tests.factories import make_claims, next_number
from turnstate_app.managers import CLAIM_FIELDS
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pauses import MintedPause, amint_pause, mint_pause, resume_pause
from turnstate_app.ports import ModelCheckpointCommandPort
from turnstate_app.turnstate import TurnCheckpointStore, turn_state_key

MESSAGES = [
    {"role": "user", "content": "Book me a flight to Lisbon."},
    {"role": "assistant", "tool_calls": [{"id": "call-1", "name": "ask_user"}]},
]
"""The transcript every pause records unless told otherwise."""


class TurnStateFailsPort(ModelCheckpointCommandPort):
    """Writes requests and answers; refuses turn state, as a failing database would."""

    def write_metadata_sync(self, **kwargs: Any) -> None:
        if kwargs["key"].startswith("turn_state:"):
            raise ConnectionError("database went away")
        super().write_metadata_sync(**kwargs)


def mint_fields(
    n: int | None = None, *, owner: Any = None, failing: bool = False, **overrides: Any
) -> dict[str, Any]:
    """What :func:`mint` passes to ``mint_pause``; ``failing``: the turn-state record fails."""
    n = next_number() if n is None else n
    claims = make_claims(run_id=f"run-{n}", thread_id=f"thread-{n}", tool_call_id=f"call-{n}")
    fields: dict[str, Any] = {name: getattr(claims, name) for name in CLAIM_FIELDS if name != "jti"}
    fields |= {
        "request": {"question": "Which date?"},
        "prompt": "Book me a flight to Lisbon.",
        "messages": MESSAGES,
        "owner": owner,
    }
    fields |= overrides
    if failing:
        fields["store"] = TurnCheckpointStore(commands=TurnStateFailsPort())
    return fields


def mint(n: int | None = None, *, owner: Any = None, failing: bool = False, **overrides: Any) -> MintedPause:
    """A real pause through the lifecycle: request row, turn state, ledger row, token."""
    return mint_pause(**mint_fields(n, owner=owner, failing=failing, **overrides))


async def amint(n: int | None = None, **overrides: Any) -> MintedPause:
    """:func:`mint` through ``amint_pause``."""
    return await amint_pause(**mint_fields(n, **overrides))


def mint_reusing_jti(of: MintedPause, n: int, **overrides: Any) -> MintedPause:
    """:func:`mint` with the ledger id of ``of``: the ledger refuses the row, as it would a
    replayed or colliding id."""
    from turnstate_app.pauses import mint as minting

    real = minting.new_jti
    minting.new_jti = lambda: of.claims.jti
    try:
        return mint(n, **overrides)
    finally:
        minting.new_jti = real


def answered(n: int | None = None, **overrides: Any) -> MintedPause:
    """A pause answered once, with ``{"a": n}``."""
    minted = mint(n, **overrides)
    resume_pause(minted.token, {"a": n})
    return minted


def lose_turn_state(minted: MintedPause) -> None:
    """Remove the pause's turn-state row, as a failed record or a careless operator would."""
    CheckpointMetadata.objects.filter(
        thread_id=minted.claims.thread_id, key=turn_state_key(minted.claims)
    ).delete()


def lost(n: int | None = None, **overrides: Any) -> MintedPause:
    """A pending pause whose turn-state row went missing after the mint."""
    minted = mint(n, **overrides)
    lose_turn_state(minted)
    return minted


def legacy_request(n: int | None = None, *, thread_id: str | None = None) -> CheckpointMetadata:
    """A request row written by a build that kept no ledger and no turn state: ``legacy-<n>``."""
    n = next_number() if n is None else n
    thread_id = f"legacy-{n}" if thread_id is None else thread_id
    key = f"interrupt_payload:int-{n}"
    ModelCheckpointCommandPort().write_metadata_sync(
        thread_id=thread_id, checkpoint_id="cp", key=key, value="{}", task_id=None
    )
    row: CheckpointMetadata = CheckpointMetadata.objects.get(thread_id=thread_id, key=key)
    return row


def age(minted: MintedPause, days: int) -> None:
    """Move the pause's last event ``days`` into the past (answered_at when answered, else expires_at)."""
    then = timezone.now() - timedelta(days=days)
    pauses = Pause.objects.filter(jti=minted.claims.jti)
    pauses.filter(answered_at__isnull=False).update(answered_at=then, created_at=then)
    pauses.filter(answered_at__isnull=True).update(expires_at=then, created_at=then)


def expire(minted: MintedPause, days: int) -> None:
    """Marked expired, ``days`` ago."""
    Pause.objects.filter(jti=minted.claims.jti).update(status="expired")
    age(minted, days)


def rows_of(minted: MintedPause) -> set[str]:
    return set(
        CheckpointMetadata.objects.filter(thread_id=minted.claims.thread_id).values_list("key", flat=True)
    )
