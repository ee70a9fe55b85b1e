"""Spans and log records never carry a question, an answer or a transcript, not even inside an
exception's message: a marker planted in each is looked for in every span (name, attributes,
events, status) and every log record (message, arguments, extras, traceback) the work produced.

Real OpenTelemetry SDK (the in-memory exporter of ``tests/test_telemetry.py``), real LangGraph,
real databases; every logger at DEBUG.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from django.dispatch import receiver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from opentelemetry.sdk.trace import ReadableSpan
from typing_extensions import TypedDict

from tests.api_support import RESUME, client_for
from tests.contrib.langgraph.graphs import config
from tests.factories import UserFactory
from tests.pause_helpers import mint
from tests.test_telemetry import Recorded, installed
from turnstate_app import telemetry
from turnstate_app.checkpoints import answer_key
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver, continue_graph, pause_interrupts
from turnstate_app.errors import AnswerValidationError, PayloadBindingError
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pauses import continue_once, pause_minted, resume_pause
from turnstate_app.pauses.handoff import rebuild_resumed
from turnstate_app.ports import get_default_store
from turnstate_app.ports.sealing import value_mac
from turnstate_app.turnstate import turn_state_key

pytestmark = pytest.mark.django_db(transaction=True)

MARKER = "marker-5f1c-lisbon-on-the-ninth"
"""What a person or an agent wrote; it must reach no span and no log record."""


@pytest.fixture
def seen(caplog: pytest.LogCaptureFixture) -> Iterator[Seen]:
    recorded = installed()
    recorded.spans.clear()
    caplog.set_level(logging.DEBUG)
    for name in ("turnstate_app", "django", "langgraph", "langchain"):
        caplog.set_level(logging.DEBUG, logger=name)
    yield Seen(recorded, caplog)


class Seen:
    """What the work under test left in spans and log records, as text to search."""

    def __init__(self, recorded: Recorded, caplog: pytest.LogCaptureFixture) -> None:
        self.recorded = recorded
        self.caplog = caplog

    def spans(self) -> list[ReadableSpan]:
        return self.recorded.finished()

    def texts(self) -> Iterator[tuple[str, str]]:
        for span in self.spans():
            yield f"span {span.name}", span.name
            yield f"span {span.name} attributes", repr(dict(span.attributes or {}))
            yield f"span {span.name} status", span.status.description or ""
            for event in span.events:
                yield f"span {span.name} event {event.name}", f"{event.name} {dict(event.attributes or {})!r}"
            for link in span.links:
                yield f"span {span.name} link", repr(dict(link.attributes or {}))
        formatter = logging.Formatter()
        for record in self.caplog.records:
            where = f"log {record.name}:{record.lineno}"
            yield where, record.getMessage()
            yield f"{where} fields", repr({k: v for k, v in vars(record).items() if k != "exc_info"})
            if record.exc_info:
                yield f"{where} exc_info", formatter.formatException(record.exc_info)
            if record.stack_info:
                yield f"{where} stack_info", record.stack_info

    def carrying_the_marker(self) -> list[str]:
        return [f"{where}: {text[:400]}" for where, text in self.texts() if MARKER in text]


def failed_on_the_span(seen: Seen, name: str) -> ReadableSpan:
    """The span ``name``, which must show the failure (its type) without its message."""
    [span] = [span for span in seen.spans() if span.name == name]
    assert span.status.status_code.name == "ERROR"
    [event] = [event for event in span.events if event.name == "exception"]
    assert event.attributes is not None and event.attributes["exception.type"]
    return span


# -- (1) an answer refused by its schema -------------------------------------------------------


def test_an_answer_refused_by_its_schema_reaches_no_span_and_no_log(seen: Seen) -> None:
    minted = mint(answer_schema={"type": "object"})
    with pytest.raises(AnswerValidationError) as refused:
        resume_pause(minted.token, MARKER)
    assert MARKER in str(refused.value)  # the person's own error may quote their answer...
    span = failed_on_the_span(seen, "turnstate.resume")
    [event] = span.events
    assert event.attributes is not None
    assert event.attributes["exception.type"] == "turnstate_app.errors.AnswerValidationError"
    assert event.attributes["exception.message"] == telemetry.WITHHELD
    assert "in resume_pause" in str(event.attributes["exception.stacktrace"])  # where it was raised
    assert span.status.description == "turnstate_app.errors.AnswerValidationError"
    assert seen.carrying_the_marker() == []  # ...what operators collect never does


def test_an_answer_refused_over_rest_reaches_no_span_and_no_log(seen: Seen) -> None:
    owner = UserFactory.create()
    minted = mint(owner=owner, answer_schema={"type": "object"})
    response = client_for(owner).post(RESUME, {"token": minted.token, "answer": MARKER}, format="json")
    assert response.status_code == 400
    assert seen.spans()
    assert seen.carrying_the_marker() == []


# -- (2) a run that fails ----------------------------------------------------------------------


class BookingState(TypedDict, total=False):
    answer: str


def _ask(state: BookingState) -> dict[str, Any]:
    return {"answer": interrupt({"question": "Which date suits you?"})}


def _book(state: BookingState) -> dict[str, Any]:
    raise RuntimeError(f"the booking service refused {state['answer']!r}")


def booking_graph() -> Any:
    builder = StateGraph(BookingState)
    builder.add_node("ask", _ask)
    builder.add_node("book", _book)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "book")
    builder.add_edge("book", END)
    return builder.compile(checkpointer=DjangoCheckpointSaver(), name="booker")


def test_a_langgraph_run_raising_with_the_answer_reaches_no_span_and_no_log(seen: Seen) -> None:
    graph = booking_graph()
    graph.invoke({}, config("thread-booking"))
    [minted] = pause_interrupts(graph, config("thread-booking"), run_id="run-1", session_id="session-1")
    resumed = resume_pause(minted.token, MARKER)
    with pytest.raises(RuntimeError, match=MARKER):
        continue_graph(graph, resumed)
    failed_on_the_span(seen, "turnstate.continue")
    assert seen.carrying_the_marker() == []


def test_a_run_raising_with_the_transcript_reaches_no_span_and_no_log(seen: Seen) -> None:
    resumed = resume_pause(mint(messages=[{"role": "user", "content": MARKER}]).token, "yes")

    def run(continuation: Any) -> None:
        raise ValueError(f"the model refused: {continuation.resumed.checkpoint.messages!r}")

    with pytest.raises(ValueError, match=MARKER):
        continue_once(resumed, run)
    failed_on_the_span(seen, "turnstate.continue")
    assert seen.carrying_the_marker() == []


def quoting_handler(resumed: Any) -> None:
    """A ``RESUME_HANDLER`` whose failure quotes the answer it was given."""
    raise RuntimeError(f"could not queue the answer {resumed.answer!r}")


def test_a_handler_raising_with_the_answer_reaches_no_span_and_no_log(
    seen: Seen, turnstate_settings: dict[str, Any]
) -> None:
    turnstate_settings["RESUME_HANDLER"] = f"{__name__}.quoting_handler"
    minted = mint()
    resume_pause(minted.token, MARKER)
    assert Pause.objects.get(jti=minted.claims.jti).handed_off_at is None
    assert any(record.levelno >= logging.ERROR for record in seen.caplog.records)
    assert seen.carrying_the_marker() == []


# -- (3) a tampered row ------------------------------------------------------------------------


def forge_with_mac(row: CheckpointMetadata, value: str) -> None:
    """``row`` rewritten with a MAC that verifies (as only a holder of SECRET_KEY could): the
    value reaches the parsers, whose errors must not carry it."""
    mac = value_mac(row.thread_id, row.checkpoint_id, row.key, value, row.encryption_key_id)
    CheckpointMetadata.objects.filter(pk=row.pk).update(value=value, value_mac=mac)


def test_a_tampered_turn_state_reaches_no_span_and_no_log(seen: Seen) -> None:
    minted = mint()
    row = CheckpointMetadata.objects.get(thread_id=minted.claims.thread_id, key=turn_state_key(minted.claims))
    tampered = json.loads(row.value)
    tampered["messages"] = MARKER  # a string where a list belongs: the validator quotes it
    forge_with_mac(row, json.dumps(tampered))
    with pytest.raises(PayloadBindingError):
        resume_pause(minted.token, "yes")
    failed_on_the_span(seen, "turnstate.resume")
    assert seen.carrying_the_marker() == []


def test_a_tampered_answer_row_reaches_no_span_and_no_log(seen: Seen) -> None:
    minted = mint()
    resume_pause(minted.token, "yes")
    row = CheckpointMetadata.objects.get(thread_id=minted.claims.thread_id, key=answer_key(minted.claims))
    forge_with_mac(row, f"{{not json: {MARKER}")
    with pytest.raises(ValueError):
        rebuild_resumed(Pause.objects.get(jti=minted.claims.jti), get_default_store())
    assert seen.carrying_the_marker() == []


def test_a_tampered_ledger_row_whose_error_quotes_it_reaches_no_span_and_no_log(seen: Seen) -> None:
    minted = mint(answer_schema={"type": "string"})
    Pause.objects.filter(jti=minted.claims.jti).update(answer_schema={"type": MARKER})
    with pytest.raises(Exception, match=MARKER):  # the validator quotes the schema it cannot use
        resume_pause(minted.token, "yes")
    failed_on_the_span(seen, "turnstate.resume")
    assert seen.carrying_the_marker() == []


# -- (4) the question ------------------------------------------------------------------------


def test_a_question_and_its_transcript_reach_no_span_and_no_log(seen: Seen) -> None:
    minted = mint(request={"question": MARKER}, prompt=MARKER, messages=[{"role": "user", "content": MARKER}])
    resumed = resume_pause(minted.token, "yes")
    assert resumed.checkpoint is not None and MARKER in repr(resumed.checkpoint.messages)
    assert continue_once(resumed, lambda continuation: None).ran
    assert [span.name for span in seen.spans()] == [
        "turnstate.mint",
        "turnstate.resume",
        "turnstate.continue",
    ]
    assert seen.carrying_the_marker() == []


def test_a_receiver_quoting_the_question_reaches_no_span_and_none_of_the_apps_logs(seen: Seen) -> None:
    """Django's ``send_robust`` logs a failing receiver's message itself (logger ``django.dispatch``):
    what a project's receiver puts in its exception is the project's to word. The app's own record of
    the failure names its class only."""

    def announce(sender: Any, minted: Any, pause: Any, **kwargs: Any) -> None:
        raise ConnectionError(f"the notifier could not send {minted.claims.jti}: {MARKER}")

    receiver(pause_minted, dispatch_uid="quoting-receiver")(announce)
    try:
        minted = mint(request={"question": MARKER})
    finally:
        pause_minted.disconnect(dispatch_uid="quoting-receiver")
    [own] = [record for record in seen.caplog.records if record.name == "turnstate_app.pauses.mint"]
    assert minted.claims.jti in own.getMessage() and "ConnectionError" in own.getMessage()
    assert [
        where for where in seen.carrying_the_marker() if not where.startswith("log django.dispatch")
    ] == []
