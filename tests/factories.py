from __future__ import annotations

from datetime import timedelta
from typing import Any

import factory
from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.utils import timezone

from turnstate_app.contracts import PauseClaims
from turnstate_app.keys import payload_key
from turnstate_app.managers import CLAIM_FIELDS
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.ports.sealing import value_mac
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
    encryption_key_id = None
    # As the port writes it; pass value_mac=None (or another) to plant a row the app did not write.
    value_mac = factory.LazyAttribute(
        lambda row: value_mac(row.thread_id, row.checkpoint_id, row.key, row.value, row.encryption_key_id)
    )


class PauseFactory(factory.django.DjangoModelFactory[Pause]):
    """A ledger row alone (no store rows): cheap, for lists and pagination.

    The identity comes from ``claims`` (a :class:`PauseClaimsFactory`: its numbers never meet
    those of a pause minted without one, see :func:`next_number`); identity fields passed by
    name override the claims' own, and ``request_key`` follows them as the lifecycle derives it.
    """

    class Meta:
        model = Pause

    claims = factory.SubFactory(PauseClaimsFactory)
    resumable = True
    owner = None
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(days=1))

    @classmethod
    def _build(cls, model_class: type[Pause], *args: Any, **fields: Any) -> Pause:
        claims = fields.pop("claims")
        claims = claims.model_copy(update={name: fields.pop(name) for name in CLAIM_FIELDS if name in fields})
        fields.setdefault("request_key", payload_key(claims))
        return model_class.objects.build(claims, **fields)

    @classmethod
    def _create(cls, model_class: type[Pause], *args: Any, **fields: Any) -> Pause:
        pause = cls._build(model_class, *args, **fields)
        pause.save(force_insert=True)
        return pause


class UserFactory(factory.django.DjangoModelFactory[AbstractUser]):
    """A user without a password (hashing one costs more than a whole test), as ``create_user`` makes it."""

    class Meta:
        model = settings.AUTH_USER_MODEL

    username = factory.Sequence(lambda n: f"user-{n}")
    is_staff = False

    @classmethod
    def _create(cls, model_class: Any, *args: Any, **fields: Any) -> Any:
        return cls._get_manager(model_class).create_user(*args, **fields)


def next_number() -> int:
    """A number no factory-made or helper-made pause of this run has had: the claims' own sequence."""
    number: int = PauseClaimsFactory._meta.next_sequence()
    return number


def make_claims(**overrides: Any) -> PauseClaims:
    """Typed front for :class:`PauseClaimsFactory`."""
    claims: PauseClaims = PauseClaimsFactory(**overrides)
    return claims


def make_turn(**overrides: Any) -> TurnCheckpoint:
    """Typed front for :class:`TurnCheckpointFactory` (pass ``claims=`` to stamp it)."""
    turn: TurnCheckpoint = TurnCheckpointFactory(**overrides)
    return turn
