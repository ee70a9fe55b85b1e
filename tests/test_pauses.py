"""The pause lifecycle: mint, answer exactly once, hand on — on the configured database."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import Any

import pytest
from django.core.exceptions import PermissionDenied
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.factories import UserFactory
from tests.pause_helpers import MESSAGES, amint, lose_turn_state, lost, mint
from turnstate_app.checkpoints import answer_key, payload_key
from turnstate_app.errors import (
    CheckpointFieldError,
    PauseAlreadyAnsweredError,
    PauseCheckpointNotFoundError,
    PauseExpiredError,
    PayloadBindingError,
)
from turnstate_app.models import CheckpointMetadata, Pause, PauseStatus
from turnstate_app.pauses import (
    ResumedPause,
    aresume_pause,
    pause_answered,
    pause_minted,
    redeliver,
    resume_pause,
)
from turnstate_app.pauses.tokens import read_token
from turnstate_app.ports import ModelCheckpointCommandPort
from turnstate_app.turnstate import TurnCheckpoint, turn_state_key

pytestmark = pytest.mark.django_db(transaction=True)


class RequestFailsPort(ModelCheckpointCommandPort):
    def write_metadata_sync(self, **kwargs: Any) -> None:
        raise ConnectionError("database went away")


HANDLED: list[ResumedPause] = []


def recording_handler(resumed: ResumedPause) -> None:
    HANDLED.append(resumed)


def failing_handler(resumed: ResumedPause) -> None:
    raise RuntimeError("queue unavailable")


@pytest.fixture(autouse=True)
def _clear_handled() -> None:
    HANDLED.clear()


def stored(key: str) -> str | None:
    row = CheckpointMetadata.objects.filter(key=key).first()
    return None if row is None else row.value


# -- mint ---------------------------------------------------------------------------------


def test_mint_records_request_turn_state_and_ledger() -> None:
    minted = mint(1)
    claims = minted.claims
    assert minted.resumable is True
    assert len(claims.jti) >= 32
    assert json.loads(stored(payload_key(claims)) or "") == {"question": "Which date?"}
    turn = TurnCheckpoint.decode(stored(turn_state_key(claims)) or "")
    assert turn.messages == MESSAGES and turn.thread_id == "thread-1"
    pause = Pause.objects.get(jti=claims.jti)
    assert (pause.status, pause.resumable, pause.request_key) == ("pending", True, payload_key(claims))
    expected_age = timedelta(days=7)
    assert abs((pause.expires_at - pause.created_at) - expected_age) < timedelta(seconds=5)


def test_token_carries_the_claims_only() -> None:
    minted = mint(1, prompt="SECRET PROMPT", request={"question": "SECRET QUESTION"})
    assert read_token(minted.token) == minted.claims
    from django.core import signing

    from turnstate_app.pauses.tokens import TOKEN_SALT

    payload = signing.loads(minted.token, salt=TOKEN_SALT)
    assert "SECRET" not in json.dumps(payload)
    assert set(payload) <= set(type(minted.claims).model_fields)


def test_each_mint_gets_a_fresh_jti() -> None:
    assert len({mint(1).claims.jti for _ in range(20)}) == 20


def test_a_failed_record_still_mints_an_answerable_unresumable_pause(
    turnstate_settings: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    turnstate_settings["PORT"] = "tests.pause_helpers.TurnStateFailsPort"
    with caplog.at_level(logging.WARNING):
        minted = mint(1)
    assert minted.resumable is False
    assert minted.claims.jti in caplog.text and "thread-1" in caplog.text
    assert Pause.objects.get(jti=minted.claims.jti).resumable is False
    resumed = resume_pause(minted.token, "May 3rd")
    assert resumed.checkpoint is None and resumed.resumable is False
    assert Pause.objects.get(jti=minted.claims.jti).status == "answered"


def test_a_failed_request_write_mints_nothing(turnstate_settings: dict[str, Any]) -> None:
    turnstate_settings["PORT"] = "tests.test_pauses.RequestFailsPort"
    with pytest.raises(ConnectionError):
        mint(1)
    assert Pause.objects.count() == 0


def test_mint_refuses_what_cannot_be_stored_before_writing() -> None:
    with pytest.raises(CheckpointFieldError, match="request"):
        mint(1, request={"when": object()})
    with pytest.raises(CheckpointFieldError, match="messages"):
        mint(1, messages=[{"blob": object()}])
    assert CheckpointMetadata.objects.count() == 0 and Pause.objects.count() == 0


def test_interrupt_pauses_use_the_interrupt_key() -> None:
    minted = mint(1, tool_call_id=None, interrupt_id="int-7", name=None)
    assert Pause.objects.get().request_key == "interrupt_payload:int-7"
    assert resume_pause(minted.token, {"approve": True}).checkpoint is not None


# -- resume -------------------------------------------------------------------------------


def test_resume_returns_the_recorded_turn_and_stores_the_answer() -> None:
    minted = mint(1)
    resumed = resume_pause(minted.token, {"date": "2027-05-03", "ok": True})
    assert resumed.claims == minted.claims
    assert resumed.answer == {"date": "2027-05-03", "ok": True}
    assert resumed.checkpoint is not None and resumed.checkpoint.messages == MESSAGES
    assert json.loads(stored(answer_key(minted.claims)) or "") == resumed.answer
    pause = Pause.objects.get()
    assert pause.status == "answered" and pause.answered_at is not None


def test_a_token_is_consumed_once() -> None:
    minted = mint(1)
    resume_pause(minted.token, "yes")
    with pytest.raises(PauseAlreadyAnsweredError):
        resume_pause(minted.token, "no")
    assert json.loads(stored(answer_key(minted.claims)) or "") == "yes"


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"),
        lambda t: t[: len(t) // 2],
        lambda t: t + "x",
        lambda t: "",
        lambda t: "garbage",
        lambda t: "é" * 100,
        lambda t: "a" * 1_000_000,
        lambda t: None,
    ],
)
def test_bad_tokens_are_binding_errors_and_change_nothing(mangle: Any) -> None:
    minted = mint(1)
    with pytest.raises(PayloadBindingError):
        resume_pause(mangle(minted.token), "yes")
    assert Pause.objects.get().status == "pending"
    assert stored(answer_key(minted.claims)) is None


def test_tokens_signed_with_another_key_or_salt_fail(settings: Any) -> None:
    from django.core import signing

    minted = mint(1)
    payload = minted.claims.model_dump(exclude_none=True)
    with pytest.raises(PayloadBindingError):
        resume_pause(signing.dumps(payload, salt="another.salt", compress=True), "x")
    with pytest.raises(PayloadBindingError):
        resume_pause(signing.dumps(payload, key="another-secret", salt="turnstate_app.pauses.token"), "x")
    assert Pause.objects.get().status == "pending"


def test_rotated_secret_keys_still_verify(settings: Any) -> None:
    minted = mint(1)
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "a-brand-new-secret-key"
    assert resume_pause(minted.token, "yes").answer == "yes"


def test_no_ledger_row_is_not_found() -> None:
    minted = mint(1)
    Pause.objects.all().delete()
    with pytest.raises(PauseCheckpointNotFoundError):
        resume_pause(minted.token, "yes")


def test_expired_pending_pause_becomes_expired_and_answered_stays_answered() -> None:
    old, answered = mint(1), mint(1, tool_call_id="call-2")
    resume_pause(answered.token, "done")
    Pause.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(PauseExpiredError):
        resume_pause(old.token, "late")
    assert Pause.objects.get(jti=old.claims.jti).status == "expired"
    with pytest.raises(PauseExpiredError):
        resume_pause(old.token, "later")
    with pytest.raises(PauseAlreadyAnsweredError):  # answered wins over age
        resume_pause(answered.token, "again")
    assert Pause.objects.get(jti=answered.claims.jti).status == "answered"


def test_owner_or_staff_may_answer_an_owned_pause(users: dict[str, Any]) -> None:
    owner, other, staff = users["owner"], users["other"], users["staff"]
    first, second = mint(1, owner=owner), mint(1, owner=owner, tool_call_id="call-2")
    with pytest.raises(PermissionDenied):
        resume_pause(first.token, "x", user=other)
    assert Pause.objects.get(jti=first.claims.jti).status == "pending"
    assert resume_pause(first.token, "x", user=owner).answer == "x"
    assert resume_pause(second.token, "y", user=staff).answer == "y"


def test_anyone_holding_the_token_may_answer_an_unowned_pause() -> None:
    someone = UserFactory.create()
    assert resume_pause(mint(1).token, "x", user=someone).answer == "x"


def test_another_turns_record_is_refused_before_consuming() -> None:
    minted = mint(1)
    row = CheckpointMetadata.objects.get(key=turn_state_key(minted.claims))
    document = json.loads(row.value)
    document["run_id"] = "someone-elses-run"
    row.value = json.dumps(document)
    row.save()
    with pytest.raises(PayloadBindingError):
        resume_pause(minted.token, "x")
    assert Pause.objects.get().status == "pending"


def test_nothing_stored_is_not_found_and_not_consumed() -> None:
    minted = mint(1)
    CheckpointMetadata.objects.all().delete()
    with pytest.raises(PauseCheckpointNotFoundError):
        resume_pause(minted.token, "x")
    assert Pause.objects.get().status == "pending"


def test_lost_turn_state_is_still_answerable() -> None:
    minted = lost(1)
    resumed = resume_pause(minted.token, "x")
    assert resumed.checkpoint is None


@pytest.mark.parametrize("answer", [object(), {1j: "x"}, float("nan")])
def test_answers_that_are_not_json_are_refused(answer: Any) -> None:
    minted = mint(1)
    with pytest.raises(CheckpointFieldError, match="answer"):
        resume_pause(minted.token, answer)
    assert Pause.objects.get().status == "pending"


def test_an_oversize_answer_is_refused(turnstate_settings: dict[str, Any]) -> None:
    turnstate_settings["MAX_VALUE_BYTES"] = 4096
    minted = mint(1)
    with pytest.raises(CheckpointFieldError, match="MAX_VALUE_BYTES"):
        resume_pause(minted.token, "x" * 5000)
    assert Pause.objects.get().status == "pending"


def test_a_failed_answer_write_rolls_the_consume_back(monkeypatch: pytest.MonkeyPatch) -> None:
    minted = mint(1)

    def refuse(self: Any, **kwargs: Any) -> None:
        raise ConnectionError("database went away")

    monkeypatch.setattr(ModelCheckpointCommandPort, "write_metadata_sync", refuse)
    with pytest.raises(ConnectionError):
        resume_pause(minted.token, "x")
    monkeypatch.undo()
    assert Pause.objects.get().status == "pending"
    assert resume_pause(minted.token, "x").answer == "x"


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="one statement consumes and answers on PostgreSQL"
)
def test_a_refused_consume_and_answer_statement_keeps_the_pause_pending(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from turnstate_app.ports.execution import run_statement

    minted = mint(1)

    def refuse_answering(connection: Any, sql: str, params: Any, **kwargs: Any) -> Any:
        if sql.startswith("WITH won AS"):
            raise ConnectionError("database went away")
        return run_statement(connection, sql, params, **kwargs)

    monkeypatch.setattr("turnstate_app.ports.ledger.run_statement", refuse_answering)
    with pytest.raises(ConnectionError):
        resume_pause(minted.token, "x")
    monkeypatch.undo()
    assert Pause.objects.get().status == "pending"
    assert not CheckpointMetadata.objects.filter(key=answer_key(minted.claims)).exists()
    assert resume_pause(minted.token, "x").answer == "x"


def test_a_port_whose_write_is_overridden_writes_the_answer_itself() -> None:
    """The one-statement consume-and-answer writes on the port's behalf: never past an override."""
    from turnstate_app.turnstate import TurnCheckpointStore

    written: list[str] = []

    class CountingPort(ModelCheckpointCommandPort):
        def write_metadata_sync(self, **kwargs: Any) -> None:
            written.append(kwargs["key"])
            super().write_metadata_sync(**kwargs)

    store = TurnCheckpointStore(commands=CountingPort())
    minted = mint(1, store=store)
    written.clear()
    resume_pause(minted.token, "yes", store=store)
    assert written == [answer_key(minted.claims)]
    assert CheckpointMetadata.objects.get(key=answer_key(minted.claims)).value == '"yes"'


# -- async twins --------------------------------------------------------------------------


async def test_async_twins_interoperate_with_the_sync_ones() -> None:
    from asgiref.sync import sync_to_async

    minted = await amint(1, tool_call_id="call-a")
    resumed = await sync_to_async(resume_pause)(minted.token, "sync answer")
    assert resumed.checkpoint is not None
    with pytest.raises(PauseAlreadyAnsweredError):
        await aresume_pause(minted.token, "async answer")
    other = await sync_to_async(mint)(1, tool_call_id="call-b")
    assert (await aresume_pause(other.token, "async")).answer == "async"


# -- signals and hand-off -----------------------------------------------------------------


def test_signals_are_sent_once_after_commit() -> None:
    minted_events: list[Any] = []
    answered_events: list[Any] = []

    def on_minted(**kwargs: Any) -> None:
        minted_events.append(kwargs["minted"])

    def on_answered(**kwargs: Any) -> None:
        answered_events.append(kwargs["resumed"])

    pause_minted.connect(on_minted)
    pause_answered.connect(on_answered)
    try:
        with transaction.atomic():
            minted = mint(1)
            assert minted_events == []  # not before commit
        assert minted_events == [minted]
        with transaction.atomic():
            resume_pause(minted.token, "x")
            assert answered_events == []
        assert [r.claims.jti for r in answered_events] == [minted.claims.jti]
    finally:
        pause_minted.disconnect(on_minted)
        pause_answered.disconnect(on_answered)


def test_handler_runs_after_commit_and_is_recorded(turnstate_settings: dict[str, Any]) -> None:
    turnstate_settings["RESUME_HANDLER"] = "tests.test_pauses.recording_handler"
    minted = mint(1)
    with transaction.atomic():
        resume_pause(minted.token, "x")
        assert HANDLED == []
    assert [r.answer for r in HANDLED] == ["x"]
    assert Pause.objects.get().handed_off_at is not None
    assert Pause.objects.awaiting_handoff().count() == 0


def test_refused_resumes_never_reach_the_handler(turnstate_settings: dict[str, Any]) -> None:
    turnstate_settings["RESUME_HANDLER"] = "tests.test_pauses.recording_handler"
    minted = mint(1)
    resume_pause(minted.token, "x")
    with pytest.raises(PauseAlreadyAnsweredError):
        resume_pause(minted.token, "y")
    assert len(HANDLED) == 1


def test_a_failing_handler_leaves_the_pause_answered_and_redelivery_hands_it_over(
    turnstate_settings: dict[str, Any],
) -> None:
    turnstate_settings["RESUME_HANDLER"] = "tests.test_pauses.failing_handler"
    minted = mint(1)
    resumed = resume_pause(minted.token, {"date": "May 3rd"})
    assert resumed.answer == {"date": "May 3rd"}
    assert Pause.objects.get().status == "answered"
    assert list(Pause.objects.awaiting_handoff()) == [Pause.objects.get()]

    turnstate_settings["RESUME_HANDLER"] = "tests.test_pauses.recording_handler"
    result = redeliver()
    assert (result.delivered, result.failed) == (1, 0)
    [again] = HANDLED
    assert again.claims == minted.claims
    assert again.answer == {"date": "May 3rd"}
    assert again.checkpoint is not None and again.checkpoint.messages == MESSAGES
    assert redeliver().delivered == 0


def test_redeliver_command(turnstate_settings: dict[str, Any]) -> None:
    from io import StringIO

    from django.core.management import CommandError, call_command

    turnstate_settings["RESUME_HANDLER"] = "tests.test_pauses.failing_handler"
    resume_pause(mint(1).token, "x")
    turnstate_settings["RESUME_HANDLER"] = "tests.test_pauses.recording_handler"
    out = StringIO()
    call_command("turnstate_redeliver", "--older-than", "3600", stdout=out)
    assert "redelivered 0" in out.getvalue()
    call_command("turnstate_redeliver", "--older-than", "0", stdout=out)
    assert "redelivered 1" in out.getvalue() and len(HANDLED) == 1
    with pytest.raises(CommandError, match="negative"):
        call_command("turnstate_redeliver", "--older-than", "-1")


# -- round trips --------------------------------------------------------------------------

DATA = ("SELECT", "INSERT", "UPDATE", "DELETE", "WITH")


def data_statements(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if q["sql"].lstrip().upper().startswith(DATA)]


def savepoints(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if "SAVEPOINT" in q["sql"].upper()]


RESUME_STATEMENTS = 2 if connection.vendor == "postgresql" else 3


def test_statements_per_mint_and_resume() -> None:
    """Mint: its three writes, the turn state's alone in a savepoint (its failure is the one a
    mint survives). Resume: one read of the ledger row with its turn state, the conditional
    UPDATE and the answer (on PostgreSQL one statement), without a savepoint."""
    mint(1, tool_call_id="warm-up")  # MariaDB: a connection's first write reads max_allowed_packet once
    with CaptureQueriesContext(connection) as minting:
        minted = mint(1)
    assert len(data_statements(minting)) == 3, data_statements(minting)
    assert [sql.split()[0].upper() for sql in savepoints(minting)] == ["SAVEPOINT", "RELEASE"]
    with CaptureQueriesContext(connection) as resuming:
        resume_pause(minted.token, "x")
    assert len(data_statements(resuming)) == RESUME_STATEMENTS, data_statements(resuming)
    assert savepoints(resuming) == []

    lost = mint(1, tool_call_id="call-2")
    lose_turn_state(lost)
    with CaptureQueriesContext(connection) as resuming_lost:
        resume_pause(lost.token, "x")  # whether the request is recorded: the same read says
    assert len(data_statements(resuming_lost)) == RESUME_STATEMENTS, data_statements(resuming_lost)


def test_pause_status_choices() -> None:
    assert {c.value for c in PauseStatus} == {"pending", "answered", "expired"}


def test_expiry_follows_the_clock(
    turnstate_settings: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """TOKEN_MAX_AGE sets expires_at at mint; a clock moved past it refuses the token."""
    turnstate_settings["TOKEN_MAX_AGE"] = 60
    minted, other = mint(1), mint(1, tool_call_id="call-2")
    pause = Pause.objects.get(jti=minted.claims.jti)
    assert abs((pause.expires_at - pause.created_at) - timedelta(seconds=60)) < timedelta(seconds=2)
    frozen = timezone.now() + timedelta(seconds=59)
    monkeypatch.setattr(timezone, "now", lambda: frozen)  # the clock every module reads
    assert resume_pause(other.token, "in time").answer == "in time"
    frozen += timedelta(seconds=2)
    with pytest.raises(PauseExpiredError):
        resume_pause(minted.token, "too late")
    assert Pause.objects.get(jti=minted.claims.jti).status == "expired"
