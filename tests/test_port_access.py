"""The lifecycle reaches any port through the store, even one with only the contract's four members.

A port need not offer sync twins: mint, resume and hand-off then cross into its async
methods through ``async_to_sync``. Nothing dispatches a port method by its name.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from turnstate_app.contracts import CheckpointCommandPort
from turnstate_app.errors import InteractionConfigurationError
from turnstate_app.models import Pause
from turnstate_app.pauses import mint_pause, resume_pause
from turnstate_app.pauses.handoff import rebuild_resumed
from turnstate_app.port_access import BlockingCommands, SyncCheckpointCommands
from turnstate_app.ports import InMemoryCheckpointCommandPort, ModelCheckpointCommandPort
from turnstate_app.turnstate import TurnCheckpointStore

pytestmark = pytest.mark.django_db(transaction=True)


class AsyncOnlyPort:
    """Exactly the contract's four members, over the model port's async methods; no twins."""

    durable = True

    def __init__(self) -> None:
        self._rows = ModelCheckpointCommandPort()
        self.calls: list[str] = []

    async def read_metadata(self, *, thread_id: str, checkpoint_id: str, key: str) -> str | None:
        self.calls.append(f"read {key}")
        return await self._rows.read_metadata(thread_id=thread_id, checkpoint_id=checkpoint_id, key=key)

    async def write_metadata(
        self, *, thread_id: str, checkpoint_id: str, key: str, value: str, task_id: str | None
    ) -> None:
        self.calls.append(f"write {key}")
        await self._rows.write_metadata(
            thread_id=thread_id, checkpoint_id=checkpoint_id, key=key, value=value, task_id=task_id
        )

    async def claim_metadata(
        self, *, thread_id: str, checkpoint_id: str, key: str, value: str, task_id: str | None
    ) -> bool:
        self.calls.append(f"claim {key}")
        return await self._rows.claim_metadata(
            thread_id=thread_id, checkpoint_id=checkpoint_id, key=key, value=value, task_id=task_id
        )


def test_the_async_only_port_is_the_contract_and_nothing_more() -> None:
    port = AsyncOnlyPort()
    assert isinstance(port, CheckpointCommandPort)
    assert not isinstance(port, SyncCheckpointCommands)
    assert not BlockingCommands(port).has_sync_twins
    assert BlockingCommands(ModelCheckpointCommandPort()).has_sync_twins
    assert BlockingCommands(InMemoryCheckpointCommandPort()).has_sync_twins


def test_mint_resume_and_rebuild_go_through_a_port_without_twins() -> None:
    port = AsyncOnlyPort()
    store = TurnCheckpointStore(commands=port)
    minted = mint_pause(
        run_id="run-1",
        session_id="s-1",
        thread_id="thread-1",
        checkpoint_id="cp-1",
        scope_hash="h",
        tool_call_id="call-1",
        request={"question": "Which date?"},
        prompt="Book a flight.",
        messages=[{"role": "user", "content": "Book a flight."}],
        store=store,
    )
    assert minted.resumable is True
    jti = minted.claims.jti
    assert port.calls == ["write ask_user_request:call-1", f"write turn_state:{jti}"]

    resumed = resume_pause(minted.token, {"date": "May 4"}, store=store)
    assert resumed.checkpoint is not None
    assert resumed.checkpoint.prompt == "Book a flight."
    assert port.calls[2:] == [f"read turn_state:{jti}", f"write answer:{jti}"]

    rebuilt = rebuild_resumed(Pause.objects.get(jti=jti), store)
    assert rebuilt.answer == {"date": "May 4"}
    assert rebuilt.checkpoint == resumed.checkpoint
    assert json.loads(store.read_request_sync(minted.claims) or "null") == {"question": "Which date?"}


def test_claims_go_through_the_store_once_per_key() -> None:
    store = TurnCheckpointStore(commands=AsyncOnlyPort())
    minted = mint_pause(
        run_id="run-2",
        session_id="s",
        thread_id="thread-2",
        checkpoint_id="cp",
        scope_hash="h",
        interrupt_id="int-2",
        request={},
        prompt="p",
        messages=[],
        store=store,
    )
    outcomes = [store.claim_sync(minted.claims, key="claim:x", value="1") for _ in range(3)]
    assert outcomes == [True, False, False]


async def test_the_async_verbs_reach_the_same_rows(memory_port: InMemoryCheckpointCommandPort) -> None:
    from tests.factories import PauseClaimsFactory

    store = TurnCheckpointStore(commands=memory_port)
    claims = PauseClaimsFactory()
    await store.write_request(claims, '{"q": 1}')
    await store.write_answer(claims, '"yes"')
    assert await store.read_request(claims) == '{"q": 1}'
    assert store.read_answer_sync(claims) == '"yes"'
    assert await store.claim(claims, key="claim:y", value="1") is True
    assert store.claim_sync(claims, key="claim:y", value="1") is False


def test_an_unwired_store_refuses_every_verb() -> None:
    from tests.factories import PauseClaimsFactory

    store = TurnCheckpointStore()
    claims: Any = PauseClaimsFactory()
    for verb in (store.write_request_sync, store.write_answer_sync):
        with pytest.raises(InteractionConfigurationError):
            verb(claims, "{}")
    with pytest.raises(InteractionConfigurationError):
        store.read_answer_sync(claims)
