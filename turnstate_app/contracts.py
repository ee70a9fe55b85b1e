"""What a pause claims about itself, and the port its rows are written through."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict


class PauseClaims(BaseModel):
    """The identity a signed token carries: which turn, which question, which mint."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    jti: str = ""
    run_id: str
    session_id: str
    thread_id: str
    checkpoint_id: str
    scope_hash: str
    tool_call_id: str | None = None
    interrupt_id: str | None = None
    name: str | None = None


@runtime_checkable
class CheckpointCommandPort(Protocol):
    """The one surface a pause writes and reads its rows through.

    Requests and turn state share it on purpose: a deployment cannot wire durable
    requests beside volatile turn state and find out only when someone answers.
    """

    durable: bool
    """True only when a write survives a process restart."""

    async def read_metadata(self, *, thread_id: str, checkpoint_id: str, key: str) -> str | None:
        """The stored value, or None when the row is absent."""
        ...

    async def write_metadata(
        self, *, thread_id: str, checkpoint_id: str, key: str, value: str, task_id: str | None
    ) -> None:
        """Insert or overwrite, atomically."""
        ...

    async def claim_metadata(
        self, *, thread_id: str, checkpoint_id: str, key: str, value: str, task_id: str | None
    ) -> bool:
        """Insert only if absent: True for the one caller that inserted, False for all others."""
        ...
