"""The checkpointer role, exactly as the seed states it, on the volatile port (no database)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from tests.factories import make_claims, make_turn
from turnstate_app.checkpoints import (
    ASK_USER_REQUEST_KEY_PREFIX,
    INTERRUPT_PAYLOAD_KEY_PREFIX,
    payload_key,
)
from turnstate_app.durability import require_durable_consumption
from turnstate_app.errors import (
    CheckpointLostError,
    InteractionConfigurationError,
    PauseCheckpointNotFoundError,
    PayloadBindingError,
    TurnStateError,
)
from turnstate_app.managers import CLAIM_FIELDS
from turnstate_app.ports import InMemoryCheckpointCommandPort, ModelCheckpointCommandPort
from turnstate_app.turnstate import (
    TURN_STATE_KEY_PREFIX,
    TurnCheckpoint,
    TurnCheckpointStore,
    stamped_turn,
    turn_state_key,
)

IDENTITY = [name for name in CLAIM_FIELDS if name != "jti"]
"""What a turn carries of its claims: all of them but the mint's own ``jti``."""


class CountingPort(InMemoryCheckpointCommandPort):
    """Counts reads, so "never caches" can be observed."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def read_metadata(self, **kwargs: Any) -> str | None:
        self.reads += 1
        return await super().read_metadata(**kwargs)


class FailingPort(InMemoryCheckpointCommandPort):
    async def write_metadata(self, **kwargs: Any) -> None:
        raise ConnectionError("database is down")


async def write_request(port: InMemoryCheckpointCommandPort, claims: Any) -> None:
    await port.write_metadata(
        thread_id=claims.thread_id,
        checkpoint_id=claims.checkpoint_id,
        key=payload_key(claims),
        value='{"question": "Which date?"}',
        task_id=claims.run_id,
    )


def test_every_error_is_a_turnstate_error() -> None:
    for error in (
        InteractionConfigurationError,
        PauseCheckpointNotFoundError,
        CheckpointLostError,
        PayloadBindingError,
    ):
        assert issubclass(error, TurnStateError)


def test_payload_key_prefers_tool_call_then_interrupt() -> None:
    assert payload_key(make_claims(tool_call_id="c9")) == f"{ASK_USER_REQUEST_KEY_PREFIX}c9"
    assert (
        payload_key(make_claims(tool_call_id=None, interrupt_id="i9")) == f"{INTERRUPT_PAYLOAD_KEY_PREFIX}i9"
    )
    assert ASK_USER_REQUEST_KEY_PREFIX == "ask_user_request:"
    assert INTERRUPT_PAYLOAD_KEY_PREFIX == "interrupt_payload:"
    with pytest.raises(PayloadBindingError):
        payload_key(make_claims(tool_call_id=None, interrupt_id=None))


def test_turn_state_key_is_per_mint_and_needs_a_jti() -> None:
    assert turn_state_key(make_claims(jti="abc")) == f"{TURN_STATE_KEY_PREFIX}abc"
    assert TURN_STATE_KEY_PREFIX == "turn_state:"
    with pytest.raises(PayloadBindingError, match="no jti"):
        turn_state_key(make_claims(jti=""))


def test_claims_and_checkpoints_are_frozen() -> None:
    claims = make_claims()
    with pytest.raises(ValueError):
        claims.jti = "other"  # type: ignore[misc]
    checkpoint = make_turn(claims=claims)
    with pytest.raises(ValueError):
        checkpoint.prompt = "other"  # type: ignore[misc]


def test_wired_says_whether_a_port_is_there(memory_port: InMemoryCheckpointCommandPort) -> None:
    assert TurnCheckpointStore(commands=memory_port).wired is True
    assert TurnCheckpointStore().wired is False


async def test_record_then_load_round_trips(memory_port: InMemoryCheckpointCommandPort) -> None:
    store = TurnCheckpointStore(commands=memory_port)
    claims = make_claims()
    checkpoint = make_turn(claims=claims, messages=[{"role": "user", "content": "é ✓ 𝄞"}])
    assert await store.record(claims, checkpoint) is True
    assert await store.load(claims) == checkpoint
    assert await store.find(claims) == checkpoint


async def test_record_is_keyed_by_jti_so_a_second_pause_does_not_overwrite_the_first(
    memory_port: InMemoryCheckpointCommandPort,
) -> None:
    store = TurnCheckpointStore(commands=memory_port)
    first = make_claims(jti="first", tool_call_id="same-call")
    second = first.model_copy(update={"jti": "second"})
    await store.record(first, make_turn(claims=first, prompt="one"))
    await store.record(second, make_turn(claims=second, prompt="two"))
    assert (await store.load(first)).prompt == "one"
    assert (await store.load(second)).prompt == "two"


async def test_load_reads_the_port_every_call_and_never_caches() -> None:
    port = CountingPort()
    store = TurnCheckpointStore(commands=port)
    claims = make_claims()
    await store.record(claims, make_turn(claims=claims))
    await store.load(claims)
    await store.load(claims)
    assert port.reads == 2
    # The row goes away behind the store's back: the next load says so.
    port._rows.clear()
    with pytest.raises(PauseCheckpointNotFoundError):
        await store.load(claims)


async def test_load_tells_lost_from_not_found(memory_port: InMemoryCheckpointCommandPort) -> None:
    store = TurnCheckpointStore(commands=memory_port)
    claims = make_claims()
    with pytest.raises(PauseCheckpointNotFoundError) as not_found:
        await store.load(claims)
    await write_request(memory_port, claims)
    with pytest.raises(CheckpointLostError) as lost:
        await store.load(claims)
    assert "can still be answered" in str(lost.value)
    assert "cannot be continued" in str(lost.value)
    for absence in (not_found.value, lost.value):
        assert "tamper" not in str(absence).lower()


async def test_unwired_store_cannot_load_and_does_not_record() -> None:
    store = TurnCheckpointStore()
    claims = make_claims()
    with pytest.raises(InteractionConfigurationError):
        await store.load(claims)
    assert await store.find(claims) is None
    assert await store.record(claims, make_turn(claims=claims)) is False


async def test_find_folds_only_the_three_absences(
    memory_port: InMemoryCheckpointCommandPort,
) -> None:
    store = TurnCheckpointStore(commands=memory_port)
    claims = make_claims()
    assert await store.find(claims) is None  # not found
    await write_request(memory_port, claims)
    assert await store.find(claims) is None  # lost
    await memory_port.write_metadata(
        thread_id=claims.thread_id,
        checkpoint_id=claims.checkpoint_id,
        key=turn_state_key(claims),
        value="{not json",
        task_id=None,
    )
    with pytest.raises(PayloadBindingError, match="cannot be read"):
        await store.find(claims)


@pytest.mark.parametrize("field", [name for name in IDENTITY if name != "name"])  # the name is not bound
async def test_another_turns_record_is_a_binding_error(
    memory_port: InMemoryCheckpointCommandPort, field: str
) -> None:
    store = TurnCheckpointStore(commands=memory_port)
    claims = make_claims(interrupt_id="int-1")
    foreign = make_turn(claims=claims).model_copy(update={field: "someone-else"})
    assert await store.record(claims, foreign) is True  # the key comes from the claims
    with pytest.raises(PayloadBindingError, match=field) as caught:
        await store.load(claims)
    assert "tamper" in str(caught.value)
    with pytest.raises(PayloadBindingError):
        await store.find(claims)


async def test_the_name_is_not_part_of_the_binding(
    memory_port: InMemoryCheckpointCommandPort,
) -> None:
    store = TurnCheckpointStore(commands=memory_port)
    claims = make_claims()
    await store.record(claims, make_turn(claims=claims, name="renamed"))
    assert (await store.load(claims)).name == "renamed"


async def test_record_reports_a_failed_write_without_raising(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = TurnCheckpointStore(commands=FailingPort())
    claims = make_claims()
    with caplog.at_level(logging.WARNING, logger="turnstate_app.turnstate"):
        assert await store.record(claims, make_turn(claims=claims)) is False
    assert claims.jti in caplog.text and claims.thread_id in caplog.text


async def test_record_without_jti_reports_false(memory_port: InMemoryCheckpointCommandPort) -> None:
    store = TurnCheckpointStore(commands=memory_port)
    claims = make_claims(jti="")
    assert await store.record(claims, make_turn(claims=claims)) is False


async def test_record_returns_only_after_the_write_returned() -> None:
    events: list[str] = []

    class SlowPort(InMemoryCheckpointCommandPort):
        async def write_metadata(self, **kwargs: Any) -> None:
            events.append("write started")
            await super().write_metadata(**kwargs)
            events.append("write returned")

    claims = make_claims()
    result = await TurnCheckpointStore(commands=SlowPort()).record(claims, make_turn(claims=claims))
    events.append(f"record returned {result}")
    assert events == ["write started", "write returned", "record returned True"]


def test_stamped_turn_takes_ids_from_the_claims_only() -> None:
    claims = make_claims()
    guessed = make_turn(claims=make_claims(), prompt="p", messages=[{"a": 1}])
    stamped = stamped_turn(guessed, claims)
    for field in IDENTITY:
        assert getattr(stamped, field) == getattr(claims, field)
    assert stamped.prompt == "p" and stamped.messages == [{"a": 1}]


def test_encode_carries_a_format_version_and_decodes_back() -> None:
    checkpoint = make_turn()
    document = json.loads(checkpoint.encode())
    assert document["format"] == 1
    assert TurnCheckpoint.decode(checkpoint.encode()) == checkpoint
    assert TurnCheckpoint.decode(checkpoint.encode().encode()) == checkpoint


def _document(**changes: Any) -> str:
    document = json.loads(make_turn().encode())
    for key, value in changes.items():
        if value is ...:
            document.pop(key)
        else:
            document[key] = value
    return json.dumps(document)


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "{",
        "[]",
        "null",
        b"\xff\xfe",
        _document(format=...),
        _document(format=99),
        _document(format="1"),
        _document(prompt=...),
        _document(tool_call_id=...),
        _document(prompt=42),
        _document(messages="hello"),
        _document(messages=["not a dict"]),
        _document(run_id=None),
        _document(extra_field="x"),
    ],
)
def test_decode_refuses_anything_it_cannot_fully_read(raw: str | bytes) -> None:
    with pytest.raises(ValueError):
        TurnCheckpoint.decode(raw)


def test_require_durable_consumption() -> None:
    with pytest.raises(InteractionConfigurationError):
        require_durable_consumption(None)
    with pytest.raises(InteractionConfigurationError, match="volatile"):
        require_durable_consumption(InMemoryCheckpointCommandPort())
    require_durable_consumption(ModelCheckpointCommandPort())


def test_ports_say_how_durable_they_are() -> None:
    assert ModelCheckpointCommandPort.durable is True
    assert InMemoryCheckpointCommandPort.durable is False
