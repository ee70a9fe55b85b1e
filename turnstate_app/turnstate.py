"""The checkpointer role: record a paused turn's continuable state, and read it back.

It lives on the port a pause already writes its request through, under a third,
additive key prefix (``turn_state:<jti>``), so requests written by builds that kept
no turn state are still found where they were left. What such a pause lacks is a
recorded turn state, and this module says exactly that instead of reporting a
missing checkpoint or, worse, tampering.

Recording is not best-effort: :meth:`TurnCheckpointStore.record` reports whether the
write landed, and a pause may call itself resumable only after it did.
"""

from __future__ import annotations

import logging
from typing import Any, NoReturn

from pydantic import BaseModel, ConfigDict, ValidationError

from turnstate_app import telemetry
from turnstate_app.contracts import CheckpointCommandPort, PauseClaims
from turnstate_app.errors import (
    CheckpointLostError,
    InteractionConfigurationError,
    PauseCheckpointNotFoundError,
    PayloadBindingError,
)
from turnstate_app.keys import TURN_STATE_KEY_PREFIX, answer_key, payload_key, turn_state_key
from turnstate_app.port_access import BlockingCommands
from turnstate_app.records import FORMAT_VERSION_FIELD, WRITTEN_FORMAT_VERSION, decode_record, encode_record

__all__ = [
    "FORMAT_VERSION_FIELD",
    "TURN_STATE_KEY_PREFIX",
    "WRITTEN_FORMAT_VERSION",
    "TurnCheckpoint",
    "TurnCheckpointStore",
    "stamped_turn",
    "turn_state_key",
]

logger = logging.getLogger(__name__)

_BINDING_FIELDS = (
    "run_id",
    "session_id",
    "thread_id",
    "checkpoint_id",
    "scope_hash",
    "tool_call_id",
    "interrupt_id",
)


class TurnCheckpoint(BaseModel):
    """A paused turn's continuable state: who it belongs to, the prompt and the transcript.

    The live model. What is stored is a record format of :mod:`turnstate_app.records`,
    each frozen apart from this class.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    run_id: str
    session_id: str
    thread_id: str
    checkpoint_id: str
    scope_hash: str
    tool_call_id: str | None
    interrupt_id: str | None
    name: str | None
    prompt: str
    messages: list[dict[str, Any]]

    def encode(self) -> str:
        """JSON in the format this release writes, carrying its version."""
        return encode_record(self.model_dump(mode="json"))

    @classmethod
    def decode(cls, raw: str | bytes) -> TurnCheckpoint:
        """Read a record of any version this app has written; ``ValueError`` for anything else."""
        fields = decode_record(raw)
        try:
            return cls.model_validate(fields, strict=True)
        except ValidationError as exc:
            raise ValueError(f"the record does not fit this release's turn state ({exc})") from None


def stamped_turn(state: TurnCheckpoint, claims: Any) -> TurnCheckpoint:
    """The caller's prompt and messages under the identity the *token* carries.

    A caller that guessed the ids would file the record where resume never looks.
    """
    return TurnCheckpoint(
        run_id=claims.run_id,
        session_id=claims.session_id,
        thread_id=claims.thread_id,
        checkpoint_id=claims.checkpoint_id,
        scope_hash=claims.scope_hash,
        tool_call_id=claims.tool_call_id,
        interrupt_id=claims.interrupt_id,
        name=claims.name,
        prompt=state.prompt,
        messages=state.messages,
    )


class TurnCheckpointStore:
    """Records a paused turn's continuable state, and reads it back.

    It holds no state of its own: everything it knows it asks the port, which is why
    another process asking the same port gets the same answer. It is also the one typed
    surface the lifecycle reaches the port through: a pause's request, its answer and
    single-winner claims go through the same object (and the same port) as its turn state.
    Every verb has a sync twin, which uses the port's own sync twins when it has them.
    """

    def __init__(self, *, commands: CheckpointCommandPort | None = None) -> None:
        self._commands = commands
        self._blocking = None if commands is None else BlockingCommands(commands)

    @property
    def commands(self) -> CheckpointCommandPort | None:
        """The port this store reads and writes through (None when unwired)."""
        return self._commands

    @property
    def wired(self) -> bool:
        """Whether this deployment has a checkpointer at all."""
        return self._commands is not None

    # -- the checkpointer role (the seed) --------------------------------------------

    async def find(self, claims: PauseClaims) -> TurnCheckpoint | None:
        """The recorded state, or None when there simply is not one.

        Only the three absences fold into None; an unreadable record or another
        turn's record still raises, because those are "something here is wrong".
        """
        try:
            return await self.load(claims)
        except (CheckpointLostError, InteractionConfigurationError, PauseCheckpointNotFoundError):
            return None

    async def load(self, claims: PauseClaims) -> TurnCheckpoint:
        """Rebuild the paused turn's state from the port, on every call; never from memory."""
        commands = self._require_commands()
        location = _location(claims)
        raw = await commands.read_metadata(**location, key=turn_state_key(claims))
        if raw is None:
            request = await commands.read_metadata(**location, key=payload_key(claims))
            refuse_missing(claims, request_recorded=request is not None)
        return checkpoint_from_record(claims, raw)

    async def record(self, claims: PauseClaims, checkpoint: TurnCheckpoint) -> bool:
        """Write the turn state; report whether it landed. Never raises for it.

        False is a real answer: the pause is still shown to the person, it simply
        does not call itself resumable.
        """
        if self._commands is None:
            _log_not_recorded(claims, "no checkpoint port is wired")
            return False
        try:
            await self._commands.write_metadata(
                **_location(claims),
                key=turn_state_key(claims),
                value=checkpoint.encode(),
                task_id=claims.run_id,
            )
        except Exception as exc:  # reported, and the caller acts on it
            _log_not_recorded(claims, "the write failed", failure=exc)
            return False
        return True

    def load_sync(self, claims: PauseClaims) -> TurnCheckpoint:
        """:meth:`load` for sync code."""
        blocking = self._require_blocking()
        location = _location(claims)
        raw = blocking.read(**location, key=turn_state_key(claims))
        if raw is None:
            request = blocking.read(**location, key=payload_key(claims))
            refuse_missing(claims, request_recorded=request is not None)
        return checkpoint_from_record(claims, raw)

    def find_sync(self, claims: PauseClaims) -> TurnCheckpoint | None:
        """:meth:`find` for sync code."""
        try:
            return self.load_sync(claims)
        except (CheckpointLostError, InteractionConfigurationError, PauseCheckpointNotFoundError):
            return None

    def record_sync(
        self, claims: PauseClaims, checkpoint: TurnCheckpoint, *, encoded: str | None = None
    ) -> bool:
        """:meth:`record` for sync code. ``encoded``: ``checkpoint.encode()``, when the caller has it."""
        if self._blocking is None:
            _log_not_recorded(claims, "no checkpoint port is wired")
            return False
        value = checkpoint.encode() if encoded is None else encoded
        try:
            self._blocking.write(
                **_location(claims), key=turn_state_key(claims), value=value, task_id=claims.run_id
            )
        except Exception as exc:  # reported, and the caller acts on it
            _log_not_recorded(claims, "the write failed", failure=exc)
            return False
        return True

    # -- the pause's other rows: its request and its answer --------------------------

    async def write_request(self, claims: PauseClaims, value: str) -> None:
        """Store the question under the frozen request key; raises when the write fails."""
        commands = self._require_commands()
        await commands.write_metadata(
            **_location(claims), key=payload_key(claims), value=value, task_id=claims.run_id
        )

    def write_request_sync(self, claims: PauseClaims, value: str) -> None:
        """:meth:`write_request` for sync code."""
        self._require_blocking().write(
            **_location(claims), key=payload_key(claims), value=value, task_id=claims.run_id
        )

    async def read_request(self, claims: PauseClaims) -> str | None:
        """The stored question, or None."""
        return await self._require_commands().read_metadata(**_location(claims), key=payload_key(claims))

    def read_request_sync(self, claims: PauseClaims) -> str | None:
        """:meth:`read_request` for sync code."""
        return self._require_blocking().read(**_location(claims), key=payload_key(claims))

    async def write_answer(self, claims: PauseClaims, value: str) -> None:
        """Store the person's answer under ``answer:<jti>``; raises when the write fails."""
        commands = self._require_commands()
        await commands.write_metadata(
            **_location(claims), key=answer_key(claims), value=value, task_id=claims.run_id
        )

    def write_answer_sync(self, claims: PauseClaims, value: str) -> None:
        """:meth:`write_answer` for sync code."""
        self._require_blocking().write(
            **_location(claims), key=answer_key(claims), value=value, task_id=claims.run_id
        )

    async def read_answer(self, claims: PauseClaims) -> str | None:
        """The stored answer, or None (not answered, or the row is gone)."""
        return await self._require_commands().read_metadata(**_location(claims), key=answer_key(claims))

    def read_answer_sync(self, claims: PauseClaims) -> str | None:
        """:meth:`read_answer` for sync code."""
        return self._require_blocking().read(**_location(claims), key=answer_key(claims))

    # -- single-winner claims ---------------------------------------------------------

    async def claim(self, claims: PauseClaims, *, key: str, value: str) -> bool:
        """Insert ``key`` in the pause's place only if absent: True for the one caller that did."""
        commands = self._require_commands()
        return await commands.claim_metadata(**_location(claims), key=key, value=value, task_id=claims.run_id)

    def claim_sync(self, claims: PauseClaims, *, key: str, value: str) -> bool:
        """:meth:`claim` for sync code."""
        return self._require_blocking().claim(
            **_location(claims), key=key, value=value, task_id=claims.run_id
        )

    # -- wiring -----------------------------------------------------------------------

    def _require_commands(self) -> CheckpointCommandPort:
        if self._commands is None:
            raise _unwired()
        return self._commands

    def _require_blocking(self) -> BlockingCommands:
        if self._blocking is None:
            raise _unwired()
        return self._blocking


def _location(claims: PauseClaims) -> dict[str, str]:
    """Where every row of this pause lives: its thread and checkpoint."""
    return {"thread_id": claims.thread_id, "checkpoint_id": claims.checkpoint_id}


def _unwired() -> InteractionConfigurationError:
    return InteractionConfigurationError(
        "no checkpoint commands are wired, so a paused turn's state was never "
        "recorded and cannot be rebuilt; this deployment can ask a question but "
        "not continue the run that asked it"
    )


def _log_not_recorded(claims: PauseClaims, reason: str, *, failure: Exception | None = None) -> None:
    logger.warning(
        "turn state for pause %r (thread %r) not recorded (%s); the pause is not resumable%s",
        claims.jti,
        claims.thread_id,
        reason,
        "" if failure is None else f"\n{telemetry.described(failure)}",
    )


def refuse_missing(claims: PauseClaims, *, request_recorded: bool) -> NoReturn:
    """Say precisely which absence this is. Neither is tampering."""
    if request_recorded:
        raise CheckpointLostError(
            f"pause {claims.jti!r} has its request recorded but no turn state: it was "
            "minted by a build that recorded none, or the record failed or was removed. "
            "The question can still be answered; the run cannot be continued from this store."
        )
    raise PauseCheckpointNotFoundError(
        f"nothing is recorded for pause {claims.jti!r} in thread {claims.thread_id!r} "
        f"at checkpoint {claims.checkpoint_id!r}: neither its request nor its turn state"
    )


def checkpoint_from_record(claims: PauseClaims, raw: str) -> TurnCheckpoint:
    """Decode a stored record and insist it describes the turn the claims name."""
    try:
        checkpoint = TurnCheckpoint.decode(raw)
    except ValueError as exc:
        raise PayloadBindingError(
            f"the recorded turn state for {claims.jti!r} cannot be read ({exc}); it is "
            "refused rather than continued from a partial or half-understood transcript"
        ) from exc
    mismatched = [field for field in _BINDING_FIELDS if getattr(checkpoint, field) != getattr(claims, field)]
    if mismatched:
        raise PayloadBindingError(
            f"the turn state recorded for {claims.jti!r} belongs to another turn "
            f"(differs in {', '.join(mismatched)}); refused as possible tampering"
        )
    return checkpoint
