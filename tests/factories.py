from __future__ import annotations

from typing import Any

import factory

from turnstate_app.contracts import PauseClaims
from turnstate_app.models import CheckpointMetadata
from turnstate_app.turnstate import TurnCheckpoint


class PauseClaimsFactory(factory.Factory):
    class Meta:
        model = PauseClaims

    jti = factory.Sequence(lambda n: f"jti-{n}")
    run_id = factory.Sequence(lambda n: f"run-{n}")
    session_id = "session-1"
    thread_id = factory.Sequence(lambda n: f"thread-{n}")
    checkpoint_id = "cp-1"
    scope_hash = "scope-1"
    tool_call_id = factory.Sequence(lambda n: f"call-{n}")
    interrupt_id = None
    name = "ask_user"


class TurnCheckpointFactory(factory.Factory):
    """A turn stamped with the identity of ``claims`` (pass claims=...)."""

    class Meta:
        model = TurnCheckpoint

    class Params:
        claims = factory.SubFactory(PauseClaimsFactory)

    run_id = factory.LazyAttribute(lambda o: o.claims.run_id)
    session_id = factory.LazyAttribute(lambda o: o.claims.session_id)
    thread_id = factory.LazyAttribute(lambda o: o.claims.thread_id)
    checkpoint_id = factory.LazyAttribute(lambda o: o.claims.checkpoint_id)
    scope_hash = factory.LazyAttribute(lambda o: o.claims.scope_hash)
    tool_call_id = factory.LazyAttribute(lambda o: o.claims.tool_call_id)
    interrupt_id = factory.LazyAttribute(lambda o: o.claims.interrupt_id)
    name = factory.LazyAttribute(lambda o: o.claims.name)
    prompt = "Book the cheapest flight to Lisbon."
    messages = factory.LazyFunction(
        lambda: [
            {"role": "user", "content": "Book the cheapest flight to Lisbon."},
            {"role": "assistant", "tool_calls": [{"id": "call-1", "name": "ask_user"}]},
        ]
    )


class CheckpointMetadataFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CheckpointMetadata

    thread_id = factory.Sequence(lambda n: f"thread-{n}")
    checkpoint_id = "cp-1"
    key = factory.Sequence(lambda n: f"ask_user_request:call-{n}")
    value = '{"question": "Which date?"}'
    task_id = None


def make_claims(**overrides: Any) -> PauseClaims:
    """Typed front for :class:`PauseClaimsFactory`."""
    claims: PauseClaims = PauseClaimsFactory(**overrides)
    return claims


def make_turn(**overrides: Any) -> TurnCheckpoint:
    """Typed front for :class:`TurnCheckpointFactory` (pass ``claims=`` to stamp it)."""
    turn: TurnCheckpoint = TurnCheckpointFactory(**overrides)
    return turn
