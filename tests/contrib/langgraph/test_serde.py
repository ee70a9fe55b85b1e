"""The serializer policy: strict by default, loud on bad rows, a user's serializer used as given."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import ormsgpack
import pytest
from django.core.checks import Error, Warning
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import EXT_CONSTRUCTOR_POS_ARGS
from langgraph.types import Command

from tests.contrib.langgraph.graphs import config, pydantic_graph, trip_graph
from tests.contrib.langgraph.keyed_rows import keyed_update
from turnstate_app.contracts import PauseClaims
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver, StrictSerializer, UnreadableCheckpointError
from turnstate_app.contrib.langgraph.checks import check_serde_policy
from turnstate_app.contrib.langgraph.keys import ROOT_NS_HASH
from turnstate_app.contrib.langgraph.models import ChannelBlob, Checkpoint, CheckpointWrite
from turnstate_app.errors import PayloadBindingError

pytestmark = pytest.mark.django_db(transaction=True)

ITINERARY_TYPES = [["tests.contrib.langgraph.graphs", "Itinerary"]]


def gadget(module: str, name: str, *args: Any) -> bytes:
    """A msgpack value that a permissive serializer would answer by calling ``module.name(*args)``."""
    return ormsgpack.packb(
        ormsgpack.Ext(EXT_CONSTRUCTOR_POS_ARGS, ormsgpack.packb([module, name, list(args)]))
    )


BIG = "a transcript too long to travel inside the checkpoint's row " * 1200  # > rows.inline_max


def stored_thread(saver: DjangoCheckpointSaver, value: Any = BIG) -> tuple[str, RunnableConfig]:
    thread = f"serde-{uuid.uuid4()}"
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": value}
    checkpoint["channel_versions"] = {"messages": "1"}
    stored = saver.put(
        {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}, checkpoint, {}, {"messages": "1"}
    )
    saver.put_writes(stored, [("answer", "yes")], task_id="task-1")
    return thread, stored


def test_the_default_serializer_is_strict() -> None:
    serde = DjangoCheckpointSaver().serde
    assert isinstance(serde, StrictSerializer)
    assert serde._allowed_msgpack_modules not in (True, None)


@pytest.mark.parametrize("table", ["value", "inline value", "write", "checkpoint"])
def test_a_constructor_gadget_is_refused_and_nothing_runs(
    table: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saver = DjangoCheckpointSaver()
    victim, stored = stored_thread(saver)
    bystander, _ = stored_thread(saver, "the bystander's transcript " + BIG)
    marker = tmp_path / "pwned"
    for payload in (gadget("builtins", "print", "PWNED"), gadget("os", "system", f"touch {marker}")):
        if table == "value":
            keyed_update(ChannelBlob, {"thread_id": victim}, type="msgpack", blob=payload)
        elif table == "inline value":
            body = {**empty_checkpoint(), "channel_versions": {"messages": "1"}}
            body["channel_values"] = {"messages": ["msgpack", payload]}
            type_, blob = StrictSerializer().dumps_typed(body)
            keyed_update(Checkpoint, {"thread_id": victim}, type=type_, checkpoint=blob)
        elif table == "write":
            keyed_update(CheckpointWrite, {"thread_id": victim}, type="msgpack", blob=payload)
        else:
            keyed_update(Checkpoint, {"thread_id": victim}, type="msgpack", checkpoint=payload)
        with pytest.raises(
            UnreadableCheckpointError, match=r"refused to construct (builtins\.print|os\.system)"
        ):
            saver.get_tuple(stored)
        with pytest.raises(UnreadableCheckpointError):
            list(saver.list(stored))
    assert not marker.exists()
    assert "PWNED" not in capsys.readouterr().out
    # The other thread is untouched and still reads back its own data only.
    found = saver.get_tuple({"configurable": {"thread_id": bystander, "checkpoint_ns": ""}})
    assert found is not None
    assert found.checkpoint["channel_values"] == {"messages": "the bystander's transcript " + BIG}


def test_a_corrupt_blob_is_a_clear_error_and_never_another_rows_data() -> None:
    saver = DjangoCheckpointSaver()
    victim, stored = stored_thread(saver, "victim's" + BIG)
    stored_thread(saver, "someone else's" + BIG)
    keyed_update(ChannelBlob, {"thread_id": victim}, blob=b"\xc1\xc1 not msgpack")
    with pytest.raises(
        UnreadableCheckpointError, match=rf"channel 'messages' of thread '{victim}'"
    ) as caught:
        saver.get_tuple(stored)
    assert isinstance(caught.value, PayloadBindingError)
    assert "someone else's" not in str(caught.value)


@pytest.mark.parametrize("type_", ["pickle", "json", "no-such-type"])
def test_an_unknown_or_unread_serialization_type_is_refused(type_: str) -> None:
    saver = DjangoCheckpointSaver()
    victim, stored = stored_thread(saver)
    payload = b'{"lc": 2, "type": "constructor", "id": ["builtins", "print"], "args": ["PWNED"]}'
    keyed_update(ChannelBlob, {"thread_id": victim}, type=type_, blob=payload)
    with pytest.raises(UnreadableCheckpointError, match=f"serialization type '{type_}'"):
        saver.get_tuple(stored)


def test_the_projects_own_models_survive_without_an_allowlist() -> None:
    saver = DjangoCheckpointSaver()
    claims = PauseClaims(
        jti="j",
        run_id="r",
        session_id="s",
        thread_id="t",
        checkpoint_id="c",
        scope_hash="h",
        interrupt_id="i",
    )
    _, stored = stored_thread(saver, claims)
    found = saver.get_tuple(stored)
    assert found is not None and found.checkpoint["channel_values"]["messages"] == claims


def test_pydantic_state_survives_a_pause_under_the_default_policy(turnstate_settings: dict[str, Any]) -> None:
    turnstate_settings["LANGGRAPH_MSGPACK_ALLOWLIST"] = ITINERARY_TYPES
    thread = f"pyd-{uuid.uuid4()}"
    start = {"itinerary": {"city": "Lisbon", "nights": 3}}
    [pending] = pydantic_graph(DjangoCheckpointSaver()).invoke(start, config(thread))["__interrupt__"]
    assert pending.value == {"question": "Confirm Lisbon?"}
    done = pydantic_graph(DjangoCheckpointSaver()).invoke(Command(resume={pending.id: "yes"}), config(thread))
    assert done["itinerary"].confirmed is True and done["itinerary"].city == "Lisbon"


def test_without_the_allowlist_the_same_state_is_refused_loudly() -> None:
    thread = f"pyd-{uuid.uuid4()}"
    start = {"itinerary": {"city": "Lisbon", "nights": 3}}
    [pending] = pydantic_graph(DjangoCheckpointSaver()).invoke(start, config(thread))["__interrupt__"]
    with pytest.raises(
        UnreadableCheckpointError, match=r"refused to construct tests\.contrib\.langgraph\.graphs\."
    ):
        pydantic_graph(DjangoCheckpointSaver()).invoke(Command(resume={pending.id: "yes"}), config(thread))


def test_langgraphs_strict_mode_derives_the_allowlist_through_with_allowlist(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from langgraph._internal import _serde

    # As if LANGGRAPH_STRICT_MSGPACK=true had been set before LangGraph was imported.
    monkeypatch.setattr(_serde, "STRICT_MSGPACK_ENABLED", True)
    thread = f"pyd-{uuid.uuid4()}"
    start = {"itinerary": {"city": "Porto", "nights": 2}}
    [pending] = pydantic_graph(DjangoCheckpointSaver()).invoke(start, config(thread))["__interrupt__"]
    done = pydantic_graph(DjangoCheckpointSaver()).invoke(Command(resume={pending.id: "no"}), config(thread))
    assert done["itinerary"].city == "Porto" and done["itinerary"].confirmed is False


def test_an_encrypted_serializer_is_used_as_given() -> None:
    serde = EncryptedSerializer.from_pycryptodome_aes(key=b"0123456789abcdef")
    saver = DjangoCheckpointSaver(serde=serde)
    assert saver.serde is serde or getattr(saver.serde, "cipher", None) is serde.cipher
    thread = f"enc-{uuid.uuid4()}"
    [pending] = trip_graph(saver).invoke({"transcript": ["a secret plan"]}, config(thread))["__interrupt__"]
    done = trip_graph(saver).invoke(Command(resume={pending.id: "Sunday"}), config(thread))
    assert done["transcript"][0] == "a secret plan"
    at = {"thread_id": thread, "ns_hash": ROOT_NS_HASH}
    bodies = list(Checkpoint.objects.filter(**at).values_list("type", "checkpoint"))
    writes = list(CheckpointWrite.objects.filter(**at).values_list("type", "blob"))
    values = list(ChannelBlob.objects.filter(**at).values_list("type", "blob"))
    stored = bodies + writes + values
    assert bodies and writes and all(type_.endswith("+aes") for type_, _ in stored if type_ != "empty")
    assert all(b"a secret plan" not in bytes(blob) for _, blob in stored if blob is not None)
    # Without the key the rows do not read.
    with pytest.raises(UnreadableCheckpointError):
        DjangoCheckpointSaver().get_tuple(config(thread))


def test_w002_only_when_langgraph_is_permissive_and_the_allowlist_is_empty(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:

    monkeypatch.setenv("LANGGRAPH_STRICT_MSGPACK", "false")
    settings.TURNSTATE = {}
    [warning] = check_serde_policy()
    assert isinstance(warning, Warning) and warning.id == "turnstate.W003"
    assert "before LangGraph is imported" in (warning.hint or "")
    settings.TURNSTATE = {"LANGGRAPH_MSGPACK_ALLOWLIST": ITINERARY_TYPES}
    assert check_serde_policy() == []
    settings.TURNSTATE = {}
    monkeypatch.setenv("LANGGRAPH_STRICT_MSGPACK", "true")
    assert check_serde_policy() == []


@pytest.mark.parametrize("value", ["tests.Itinerary", [["only-one"]], [[1, 2]], {"a": "b"}])
def test_e010_a_malformed_allowlist(settings: Any, value: Any) -> None:
    settings.TURNSTATE = {"LANGGRAPH_MSGPACK_ALLOWLIST": value}
    [error] = check_serde_policy()
    assert isinstance(error, Error) and error.id == "turnstate.E011"


def test_the_allowlist_key_is_known_to_the_unknown_key_check(settings: Any) -> None:
    from turnstate_app.checks import check_settings

    settings.TURNSTATE = {"LANGGRAPH_MSGPACK_ALLOWLIST": ITINERARY_TYPES}
    assert [m.id for m in check_settings()] == []
