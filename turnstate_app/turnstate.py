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

import json
import logging
from collections.abc import Callable
from typing import Any, NoReturn

from pydantic import BaseModel, ConfigDict, ValidationError

from turnstate_app.checkpoints import payload_key
from turnstate_app.contracts import CheckpointCommandPort, PauseClaims
from turnstate_app.errors import (
    CheckpointLostError,
    InteractionConfigurationError,
    PauseCheckpointNotFoundError,
    PayloadBindingError,
)

logger = logging.getLogger(__name__)

TURN_STATE_KEY_PREFIX = "turn_state:"

FORMAT_VERSION_FIELD = "format"
WRITTEN_FORMAT_VERSION = 1
"""The version :meth:`TurnCheckpoint.encode` writes.

Raised only in the release *after* the one that learned to read the new version, so
that during a rolling deploy every running process can read every record written.
"""

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
    """A paused turn's continuable state: who it belongs to, the prompt and the transcript."""

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
        """JSON with a format version, so later releases can still read it."""
        document = {FORMAT_VERSION_FIELD: WRITTEN_FORMAT_VERSION, **self.model_dump(mode="json")}
        return json.dumps(document, ensure_ascii=False, separators=(",", ":"), allow_nan=False)

    @classmethod
    def decode(cls, raw: str | bytes) -> TurnCheckpoint:
        """Read a record of any version this app has written; ``ValueError`` for anything else.

        Nothing is guessed: a record that cannot be read completely is refused whole,
        because continuing from half a transcript is worse than not continuing.
        """
        if not isinstance(raw, str | bytes | bytearray):
            raise ValueError(f"a turn-state record is text, not {type(raw).__name__}")
        try:
            document = json.loads(raw)
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError alike
            raise ValueError(f"not JSON: {exc}") from None
        if not isinstance(document, dict):
            raise ValueError(f"a JSON object was expected, not {type(document).__name__}")
        version = document.pop(FORMAT_VERSION_FIELD, None)
        reader = _READERS.get(version) if isinstance(version, int) else None
        if reader is None:
            raise ValueError(f"unknown format version {version!r}; this release reads {sorted(_READERS)}")
        return reader(document)


def _read_v1(document: dict[str, Any]) -> TurnCheckpoint:
    try:
        return TurnCheckpoint.model_validate(document, strict=True)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, err['loc'])) or '<record>'}: {err['msg']}" for err in exc.errors()
        )
        raise ValueError(f"format 1 record is incomplete or mistyped ({problems})") from None


_READERS: dict[int, Callable[[dict[str, Any]], TurnCheckpoint]] = {1: _read_v1}


def turn_state_key(claims: PauseClaims) -> str:
    """Where this pause's turn state lives: keyed by ``jti``, the one id unique per mint.

    A resumed run that pauses again on a retry of the same tool call would otherwise
    overwrite the first pause's state with the second's.
    """
    if not claims.jti:
        raise PayloadBindingError(
            "these pause claims carry no jti, so the paused turn's state has no "
            "key; nothing could record or recover it"
        )
    return f"{TURN_STATE_KEY_PREFIX}{claims.jti}"


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
    another process asking the same port gets the same answer.
    """

    def __init__(self, *, commands: CheckpointCommandPort | None = None) -> None:
        self._commands = commands

    @property
    def commands(self) -> CheckpointCommandPort | None:
        """The port this store reads and writes through (None when unwired)."""
        return self._commands

    @property
    def wired(self) -> bool:
        """Whether this deployment has a checkpointer at all."""
        return self._commands is not None

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
        raw = await commands.read_metadata(
            thread_id=claims.thread_id,
            checkpoint_id=claims.checkpoint_id,
            key=turn_state_key(claims),
        )
        if raw is None:
            has_request = (
                await commands.read_metadata(
                    thread_id=claims.thread_id,
                    checkpoint_id=claims.checkpoint_id,
                    key=payload_key(claims),
                )
                is not None
            )
            refuse_missing(claims, request_recorded=has_request)
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
                thread_id=claims.thread_id,
                checkpoint_id=claims.checkpoint_id,
                key=turn_state_key(claims),
                value=checkpoint.encode(),
                task_id=claims.run_id,
            )
        except Exception:  # reported, and the caller acts on it
            _log_not_recorded(claims, "the write failed", exc_info=True)
            return False
        return True

    # -- sync twins: the same semantics for sync callers, with no event loop involved --

    def load_sync(self, claims: PauseClaims) -> TurnCheckpoint:
        """:meth:`load` for sync code: the port's sync twins when it has them."""
        commands = self._require_commands()
        location = {"thread_id": claims.thread_id, "checkpoint_id": claims.checkpoint_id}
        raw = call_port_sync(commands, "read_metadata", **location, key=turn_state_key(claims))
        if raw is None:
            request = call_port_sync(commands, "read_metadata", **location, key=payload_key(claims))
            refuse_missing(claims, request_recorded=request is not None)
        return checkpoint_from_record(claims, raw)

    def find_sync(self, claims: PauseClaims) -> TurnCheckpoint | None:
        """:meth:`find` for sync code."""
        try:
            return self.load_sync(claims)
        except (CheckpointLostError, InteractionConfigurationError, PauseCheckpointNotFoundError):
            return None

    def record_sync(self, claims: PauseClaims, checkpoint: TurnCheckpoint) -> bool:
        """:meth:`record` for sync code: reports whether the write landed, never raises for it."""
        if self._commands is None:
            _log_not_recorded(claims, "no checkpoint port is wired")
            return False
        try:
            call_port_sync(
                self._commands,
                "write_metadata",
                thread_id=claims.thread_id,
                checkpoint_id=claims.checkpoint_id,
                key=turn_state_key(claims),
                value=checkpoint.encode(),
                task_id=claims.run_id,
            )
        except Exception:  # reported, and the caller acts on it
            _log_not_recorded(claims, "the write failed", exc_info=True)
            return False
        return True

    def _require_commands(self) -> CheckpointCommandPort:
        if self._commands is None:
            raise InteractionConfigurationError(
                "no checkpoint commands are wired, so a paused turn's state was never "
                "recorded and cannot be rebuilt; this deployment can ask a question but "
                "not continue the run that asked it"
            )
        return self._commands


def _log_not_recorded(claims: PauseClaims, reason: str, *, exc_info: bool = False) -> None:
    logger.warning(
        "turn state for pause %r (thread %r) not recorded (%s); the pause is not resumable",
        claims.jti,
        claims.thread_id,
        reason,
        exc_info=exc_info,
    )


def call_port_sync(commands: Any, method: str, **kwargs: Any) -> Any:
    """Call ``method`` on a port from sync code: its ``<method>_sync`` twin when it has one.

    A port without twins still works, through one ``async_to_sync`` bridge.
    """
    twin = getattr(commands, f"{method}_sync", None)
    if twin is not None:
        return twin(**kwargs)
    from asgiref.sync import async_to_sync

    return async_to_sync(getattr(commands, method))(**kwargs)


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
