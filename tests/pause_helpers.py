"""Pauses in every state an operator meets, for the admin, command and retention tests."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pauses import MintedPause, mint_pause, resume_pause
from turnstate_app.ports import ModelCheckpointCommandPort
from turnstate_app.turnstate import TurnCheckpointStore, turn_state_key


class TurnStateFailsPort(ModelCheckpointCommandPort):
    """Writes requests and answers; refuses turn state, as a failing database would."""

    def write_metadata_sync(self, **kwargs: Any) -> None:
        if kwargs["key"].startswith("turn_state:"):
            raise ConnectionError("database went away")
        super().write_metadata_sync(**kwargs)


def mint(n: int, *, owner: Any = None, failing: bool = False, **overrides: Any) -> MintedPause:
    """Pause ``n`` in ``thread-<n>``; ``failing``: its turn-state record fails at mint."""
    fields: dict[str, Any] = {
        "run_id": f"run-{n}",
        "session_id": "s",
        "thread_id": f"thread-{n}",
        "checkpoint_id": "cp",
        "scope_hash": "h",
        "tool_call_id": f"call-{n}",
        "request": {"q": n},
        "prompt": "p",
        "messages": [],
        "owner": owner,
    }
    fields.update(overrides)
    if failing:
        fields["store"] = TurnCheckpointStore(commands=TurnStateFailsPort())
    return mint_pause(**fields)


def answered(n: int, **overrides: Any) -> MintedPause:
    minted = mint(n, **overrides)
    resume_pause(minted.token, {"a": n})
    return minted


def lost(n: int, **overrides: Any) -> MintedPause:
    """A pending pause whose turn-state row went missing after the mint."""
    minted = mint(n, **overrides)
    CheckpointMetadata.objects.filter(
        thread_id=minted.claims.thread_id, key=turn_state_key(minted.claims)
    ).delete()
    return minted


def legacy_request(n: int) -> None:
    """A request row written by a build that kept no ledger and no turn state."""
    ModelCheckpointCommandPort().write_metadata_sync(
        thread_id=f"legacy-{n}",
        checkpoint_id="cp",
        key=f"interrupt_payload:int-{n}",
        value="{}",
        task_id=None,
    )


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
