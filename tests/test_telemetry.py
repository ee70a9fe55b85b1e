"""The lifecycle's own spans and metrics, recorded by the real OpenTelemetry SDK into memory.

One tracer and one meter provider for the whole process (OpenTelemetry allows one global of
each); each test reads what its own work added.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.factories import UserFactory
from tests.pause_helpers import age, answered, mint
from tests.processes import continue_traced_elsewhere
from turnstate_app import telemetry
from turnstate_app.errors import PauseAlreadyAnsweredError, PauseExpiredError, TokenSignatureError
from turnstate_app.expiry import expire_overdue
from turnstate_app.models import Pause
from turnstate_app.pauses import continue_once, resume_pause
from turnstate_app.pauses.handoff import rebuild_resumed
from turnstate_app.ports import get_default_store
from turnstate_app.retention import purge_pauses

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parent.parent
SPAWN = multiprocessing.get_context("spawn")


@dataclass
class Recorded:
    spans: InMemorySpanExporter
    reader: InMemoryMetricReader

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.finished() if span.name == name]

    def points(self) -> dict[tuple[str, tuple[tuple[str, Any], ...]], Any]:
        """Every metric point now: (name, attributes) -> the sum, or the histogram's (count, sum)."""
        found: dict[tuple[str, tuple[tuple[str, Any], ...]], Any] = {}
        data = self.reader.get_metrics_data()
        for resource in data.resource_metrics if data else []:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        key = (metric.name, tuple(sorted((point.attributes or {}).items())))
                        found[key] = (
                            (point.count, point.sum) if isinstance(point, HistogramDataPoint) else point.value  # type: ignore[union-attr]
                        )
        return found


@cache
def installed() -> Recorded:
    """The process's one tracer and meter provider, recording into memory; set once for every
    module that reads them (OpenTelemetry refuses a second global)."""
    spans = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(spans))
    trace.set_tracer_provider(tracing)
    reader = InMemoryMetricReader()
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    return Recorded(spans, reader)


@pytest.fixture(scope="session")
def providers() -> Recorded:
    return installed()


@pytest.fixture
def recorded(providers: Recorded) -> Iterator[Recorded]:
    providers.spans.clear()
    yield providers


def added(before: dict[Any, Any], after: dict[Any, Any], name: str, **attributes: Any) -> Any:
    """How much the counter ``name`` (with exactly these attributes) grew."""
    key = (name, tuple(sorted((f"turnstate.{k}", v) for k, v in attributes.items())))
    return after.get(key, 0) - before.get(key, 0)


# -- resume ----------------------------------------------------------------------------------


def test_an_answer_is_a_span_with_its_ids_and_outcome(recorded: Recorded) -> None:
    minted = mint()
    before = recorded.points()
    resume_pause(minted.token, "yes")
    [span] = recorded.named("turnstate.resume")
    assert span.attributes is not None
    assert span.attributes["turnstate.outcome"] == "answered"
    assert span.attributes["turnstate.jti"] == minted.claims.jti
    assert span.attributes["turnstate.thread_id"] == minted.claims.thread_id
    after = recorded.points()
    assert added(before, after, "turnstate.pauses.answered") == 1
    delay_key = ("turnstate.pause.answer_delay", ())
    count_before = before.get(delay_key, (0, 0))[0]
    assert after[delay_key][0] == count_before + 1


def test_the_answer_stores_its_trace_for_the_continuation_to_link_to(recorded: Recorded) -> None:
    minted = mint()
    resume_pause(minted.token, "yes")
    [span] = recorded.named("turnstate.resume")
    stored = Pause.objects.get(jti=minted.claims.jti).answer_traceparent
    assert stored is not None
    assert stored.split("-")[1] == format(span.context.trace_id, "032x")
    assert stored.split("-")[2] == format(span.context.span_id, "016x")


def test_the_stored_trace_is_w3c_whatever_propagators_the_project_configured(recorded: Recorded) -> None:
    """A project that propagates B3 or baggage only still gets its answer's trace stored and linked:
    the ledger's column is a W3C ``traceparent``, not whatever the global propagator writes."""
    from opentelemetry import propagate
    from opentelemetry.baggage.propagation import W3CBaggagePropagator

    configured = propagate.get_global_textmap()
    propagate.set_global_textmap(W3CBaggagePropagator())
    try:
        minted = mint()
        resume_pause(minted.token, "yes")
        [answer] = recorded.named("turnstate.resume")
        stored = Pause.objects.get(jti=minted.claims.jti).answer_traceparent
        assert stored is not None and stored.split("-")[1] == format(answer.context.trace_id, "032x")
        answered = resume_pause(mint(tool_call_id="call-2").token, "yes")
        Pause.objects.filter(jti=answered.claims.jti).update(answer_traceparent=stored)
        # A worker continues it from the ledger alone, as it was stored.
        resumed = rebuild_resumed(Pause.objects.get(jti=answered.claims.jti), get_default_store())
        continue_once(resumed, lambda continuation: None)
        [continued] = recorded.named("turnstate.continue")
        assert [link.context.trace_id for link in continued.links] == [answer.context.trace_id]
    finally:
        propagate.set_global_textmap(configured)


@pytest.mark.parametrize(
    ("refuse", "reason", "error"),
    [
        ("again", "already_answered", PauseAlreadyAnsweredError),
        ("expired", "expired", PauseExpiredError),
        ("forged", "invalid_token", TokenSignatureError),
        ("stranger", "not_owner", PermissionDenied),
    ],
)
def test_a_refused_answer_is_counted_by_reason(
    recorded: Recorded, refuse: str, reason: str, error: type[Exception]
) -> None:
    owner, stranger = UserFactory.create(), UserFactory.create()
    minted = mint(owner=owner)
    token = minted.token
    if refuse == "again":
        resume_pause(token, "first", user=owner)
    if refuse == "expired":
        Pause.objects.filter(jti=minted.claims.jti).update(expires_at=timezone.now() - timedelta(seconds=1))
    if refuse == "forged":
        token = token[:-4] + "AAAA"
    before = recorded.points()
    recorded.spans.clear()
    with pytest.raises(error):
        resume_pause(token, "second", user=stranger if refuse == "stranger" else owner)
    after = recorded.points()
    assert added(before, after, "turnstate.pauses.refused", reason=reason) == 1
    assert added(before, after, "turnstate.pauses.expired") == (1 if reason == "expired" else 0)
    [span] = recorded.named("turnstate.resume")
    assert span.attributes is not None and span.attributes["turnstate.outcome"] == reason


# -- mint and continuation ---------------------------------------------------------------------


def test_a_mint_is_a_span_and_a_count(recorded: Recorded) -> None:
    before = recorded.points()
    minted = mint(group="trip")
    [span] = recorded.named("turnstate.mint")
    assert span.attributes is not None
    assert (span.attributes["turnstate.jti"], span.attributes["turnstate.group"]) == (
        minted.claims.jti,
        "trip",
    )
    assert span.attributes["turnstate.resumable"] is True
    assert added(before, recorded.points(), "turnstate.pauses.minted") == 1


def test_a_continuation_answered_in_another_process_links_to_the_answers_trace(recorded: Recorded) -> None:
    minted = mint()
    tracer = trace.get_tracer("the person's request")
    with tracer.start_as_current_span("POST /api/turnstate/pauses/resume/") as request:
        resume_pause(minted.token, "yes")
    asked = request.get_span_context()
    [answer] = recorded.named("turnstate.resume")
    before = recorded.points()
    with ProcessPoolExecutor(1, mp_context=SPAWN) as pool:
        spans = pool.submit(
            continue_traced_elsewhere, dict(connection.settings_dict), minted.claims.jti
        ).result()
    [continued] = [span for span in spans if span["name"] == "turnstate.continue"]
    assert continued["trace_id"] != asked.trace_id  # another process, another trace...
    assert continued["links"] == [(asked.trace_id, answer.context.span_id)]  # ...linked to the answer
    assert continued["attributes"]["turnstate.outcome"] == "ran"
    assert continued["attributes"]["turnstate.jti"] == minted.claims.jti
    assert before == recorded.points()  # the other process's metrics are its own


def test_a_continuation_here_records_its_delay(recorded: Recorded) -> None:
    resumed = resume_pause(mint().token, "yes")
    before = recorded.points()
    assert continue_once(resumed, lambda continuation: "done").ran
    delay = ("turnstate.continuation.delay", ())
    assert recorded.points()[delay][0] == before.get(delay, (0, 0))[0] + 1
    [span] = recorded.named("turnstate.continue")
    assert span.attributes is not None and span.attributes["turnstate.outcome"] == "ran"


def test_a_continuation_records_its_delay_with_no_span_recording_and_reads_no_pause_for_it(
    recorded: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Metrics without tracing: the delay comes from the answer this process holds, not from a
    read of the ledger row."""
    resumed = resume_pause(mint().token, "yes")
    monkeypatch.setattr(telemetry, "span", lambda *args, **kwargs: nullcontext(None))
    before = recorded.points()
    with CaptureQueriesContext(connection) as seen:
        assert continue_once(resumed, lambda continuation: "done").ran
    delay = ("turnstate.continuation.delay", ())
    assert recorded.points()[delay][0] == before.get(delay, (0, 0))[0] + 1
    reads = [
        q["sql"] for q in seen.captured_queries if q["sql"].startswith("SELECT") and "_pause" in q["sql"]
    ]
    assert reads == []


# -- hand-off, expiry, retention ---------------------------------------------------------------


def failing_handler(resumed: Any) -> None:
    raise RuntimeError("queue unavailable")


def test_a_failed_hand_off_is_a_span_and_a_count(recorded: Recorded, turnstate_settings: Any) -> None:
    turnstate_settings["RESUME_HANDLER"] = "tests.test_telemetry.failing_handler"
    minted = mint()
    before = recorded.points()
    resume_pause(minted.token, "yes")
    assert added(before, recorded.points(), "turnstate.handoff.failures") == 1
    [span] = recorded.named("turnstate.handoff")
    assert span.attributes is not None and span.attributes["turnstate.outcome"] == "failed"


def test_expiry_counts_what_it_expired(recorded: Recorded) -> None:
    for _ in range(3):
        Pause.objects.filter(jti=mint().claims.jti).update(expires_at=timezone.now() - timedelta(seconds=1))
    before = recorded.points()
    assert expire_overdue().expired == 3
    assert added(before, recorded.points(), "turnstate.pauses.expired") == 3


def test_each_retention_batch_is_a_span_with_its_counts(recorded: Recorded) -> None:
    for _ in range(3):
        age(answered(), 40)
    purge_pauses(Pause.objects.purgeable(timezone.now() - timedelta(days=30)), batch_size=2)
    batches = recorded.named("turnstate.retention.batch")
    assert [span.attributes["turnstate.pauses"] for span in batches if span.attributes] == [2, 1]


def test_the_metrics_of_a_scripted_day(recorded: Recorded, turnstate_settings: Any) -> None:
    """Five pauses minted; three answered (one continued, one whose run raised, one whose worker
    died after its claim); one expired; one refused answer; the stalled continuation released by
    an operator, and the crashed one not (it is no stalled one)."""
    turnstate_settings["STALLED_AFTER"] = 60
    before = recorded.points()
    continued, crashed, died, unanswered, _waiting = (mint() for _ in range(5))
    assert continue_once(resume_pause(continued.token, "yes"), lambda continuation: "done").ran
    with pytest.raises(PauseAlreadyAnsweredError):
        resume_pause(continued.token, "again")

    def crash(continuation: Any) -> None:
        raise RuntimeError("the tool raised")

    with pytest.raises(RuntimeError):
        continue_once(resume_pause(crashed.token, "yes"), crash)
    resume_pause(died.token, "yes")
    # A worker killed after its claim leaves the claim behind and nothing after it.
    assert Pause.objects.claim(Pause.objects.get(jti=died.claims.jti).pk, now=timezone.now())
    Pause.objects.filter(jti=unanswered.claims.jti).update(expires_at=timezone.now() - timedelta(seconds=1))
    expire_overdue()
    assert Pause.objects.release_stalled(timezone.now() + timedelta(seconds=61)) == [died.claims.jti]
    after = recorded.points()
    counts = {
        name: added(before, after, f"turnstate.{name}")
        for name in ("pauses.minted", "pauses.answered", "pauses.expired", "continuations.stalled")
    }
    assert counts == {
        "pauses.minted": 5,
        "pauses.answered": 3,
        "pauses.expired": 1,
        "continuations.stalled": 1,
    }
    assert added(before, after, "turnstate.pauses.refused", reason="already_answered") == 1
    delays = ("turnstate.continuation.delay", ())
    assert after[delays][0] - before.get(delays, (0, 0))[0] == 2  # continue_once claimed two


# -- what spans never hold -----------------------------------------------------------------------


def test_no_span_holds_a_question_an_answer_or_a_transcript(
    recorded: Recorded, turnstate_settings: Any
) -> None:
    turnstate_settings["RESUME_HANDLER"] = "tests.test_telemetry.failing_handler"
    minted = mint(
        request={"question": "SECRET-QUESTION"},
        prompt="SECRET-PROMPT",
        messages=[{"role": "user", "content": "SECRET-TRANSCRIPT"}],
    )
    resume_pause(minted.token, {"answer": "SECRET-ANSWER"})
    with pytest.raises(PauseAlreadyAnsweredError):
        resume_pause(minted.token, {"answer": "SECRET-ANSWER-AGAIN"})
    spans = recorded.finished()
    assert spans
    dumped = json.dumps([json.loads(span.to_json()) for span in spans])
    assert "SECRET" not in dumped


# -- without the API ------------------------------------------------------------------------------

WITHOUT_OTEL = """
import sys

# As if it were not installed: an import of it fails, and importlib finds no spec.
sys.modules["opentelemetry"] = None
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from tests.pause_helpers import mint
from turnstate_app.pauses import resume_pause
from turnstate_app import telemetry
from turnstate_app.models import Pause

minted = mint(1)
resume_pause(minted.token, "yes")
assert Pause.objects.get().answer_traceparent is None
assert not telemetry.enabled()
assert not [n for n, m in sys.modules.items() if n.startswith("opentelemetry") and m is not None], "imported"
print("ok")
"""


CORE_SETTINGS = """
from tests.settings import *  # noqa: F403

# The core alone: PydanticAI itself needs OpenTelemetry's API.
INSTALLED_APPS = [app for app in INSTALLED_APPS if not app.startswith("turnstate_app.contrib")]  # noqa: F405
"""


def test_without_opentelemetry_nothing_is_imported_and_the_lifecycle_runs(tmp_path: Path) -> None:
    (tmp_path / "core_settings.py").write_text(CORE_SETTINGS)
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("DATABASE_")}  # a SQLite file here
    env = {
        **inherited,
        "DJANGO_SETTINGS_MODULE": "core_settings",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)]),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_OTEL], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr


def test_hooks_without_the_api_are_no_ops(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(telemetry, "_api", lambda: None)
    with telemetry.span("turnstate.resume", jti="x") as current:
        telemetry.outcome(current, "answered")
        telemetry.record("turnstate.pauses.answered")
    assert current is None and telemetry.traceparent() is None
