"""The lifecycle's spans and metrics, through OpenTelemetry's API when it is installed (extra ``otel``).

Without ``opentelemetry-api`` every hook here is a no-op that imports nothing and touches no
database. With it, the project's own SDK set-up (exporters, sampling) decides where spans and
metrics go; the app only names them. Spans carry ids and outcomes, never a question, an answer
or a transcript: every attribute passes through :func:`attributes`, which keeps only the
names in :data:`ATTRIBUTES`. Metrics are recorded where their event happens (a mint, an answer,
a refusal): no callback of theirs queries the database, so an exporter's thread never opens a
Django connection.

An exception is no exception to that rule: its message (a schema's refusal, a framework's error,
a database's) may quote what a person or an agent wrote, so a span that ends in one records its
class and where it was raised (:func:`described`) with an ``ERROR`` status named after the class,
and the app's log records name a failure the same way, never with ``exc_info``.

The answer and its continuation run in different processes, often minutes apart: the resume
stores its trace context (``traceparent``) on the ledger row with the answer, and the
continuation's span links to it, so one trace view leads from the person's request to the run.
"""

from __future__ import annotations

import importlib.util
import traceback
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import cache
from types import SimpleNamespace
from typing import Any

INSTRUMENTATION = "turnstate_app"

METRICS: dict[str, tuple[str, str, str]] = {
    "turnstate.pauses.minted": ("counter", "{pause}", "Pauses minted."),
    "turnstate.pauses.answered": ("counter", "{pause}", "Pauses answered (their token consumed)."),
    "turnstate.pauses.expired": ("counter", "{pause}", "Pauses found past their age unanswered."),
    "turnstate.pauses.refused": ("counter", "{answer}", "Answers refused; attribute reason."),
    "turnstate.pause.answer_delay": ("histogram", "s", "Seconds from a pause's mint to its answer."),
    "turnstate.continuation.delay": ("histogram", "s", "Seconds from an answer to its run continuing."),
    "turnstate.handoff.failures": ("counter", "{handoff}", "Hand-offs to RESUME_HANDLER that failed."),
    "turnstate.continuations.stalled": (
        "counter",
        "{continuation}",
        "Continuations found claimed and unfinished past STALLED_AFTER.",
    ),
    "turnstate.notify.failures": ("counter", "{notification}", "NOTIFY calls that raised after a mint."),
}
"""Each metric's kind, unit and description; the names are public (people alert on them)."""

ATTRIBUTES = frozenset(
    {
        "turnstate.jti",
        "turnstate.thread_id",
        "turnstate.run_id",
        "turnstate.session_id",
        "turnstate.group",
        "turnstate.agent",
        "turnstate.resumable",
        "turnstate.outcome",
        "turnstate.reason",
        "turnstate.framework",
        "turnstate.rows",
        "turnstate.pauses",
    }
)
"""The only attribute names the app sets: ids, outcomes and counts."""


@cache
def _api() -> Any:
    """OpenTelemetry's API modules, imported on first use; None when it is not installed."""
    try:
        if (
            importlib.util.find_spec("opentelemetry") is None
            or importlib.util.find_spec("opentelemetry.trace") is None
        ):
            return None
    except (ImportError, ValueError):  # a parent that is not a package, or a spec-less stand-in
        return None
    from opentelemetry import metrics, trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    tracer = trace.get_tracer(INSTRUMENTATION)
    meter = metrics.get_meter(INSTRUMENTATION)
    instruments = {
        name: (meter.create_counter if kind == "counter" else meter.create_histogram)(
            name, unit=unit, description=description
        )
        for name, (kind, unit, description) in METRICS.items()
    }
    # The ledger's column is a W3C traceparent whatever the project propagates (B3, baggage
    # only): written and read by the W3C propagator itself, never the global one.
    w3c = TraceContextTextMapPropagator()
    return SimpleNamespace(trace=trace, w3c=w3c, tracer=tracer, instruments=instruments)


def enabled() -> bool:
    """Whether OpenTelemetry's API is installed (then the hooks record)."""
    return _api() is not None


def attributes(values: dict[str, Any]) -> dict[str, Any]:
    """``turnstate.<name>`` attributes of the allowed names whose values are set; text kept short."""
    kept: dict[str, Any] = {}
    for name, value in values.items():
        key = f"turnstate.{name}"
        if value is None or key not in ATTRIBUTES:
            continue
        kept[key] = value if isinstance(value, bool | int | float) else str(value)[:200]
    return kept


_NO_SPAN: AbstractContextManager[Any] = nullcontext(None)
"""What :func:`span` gives without the API: reusable, so a no-op costs no allocation."""


def span(name: str, *, links_to: str | None = None, **values: Any) -> AbstractContextManager[Any]:
    """A span named ``name`` around the block (None without the API), linked to the trace of
    ``links_to`` (a ``traceparent``) when given. An exception leaving the block is recorded on it
    by its class and frames, never its message (see the module)."""
    api = _api()
    if api is None:
        return _NO_SPAN
    return _failures_withheld(
        api,
        api.tracer.start_as_current_span(
            name,
            attributes=attributes(values),
            links=_links(api, links_to),
            record_exception=False,
            set_status_on_exception=False,
        ),
    )


@contextmanager
def _failures_withheld(api: Any, manager: AbstractContextManager[Any]) -> Iterator[Any]:
    """The SDK would record ``str(exception)`` as the event's message and the status; this records
    the exception's class and frames instead, before the span ends."""
    with manager as current:
        try:
            yield current
        except Exception as exc:
            if not current.is_recording():
                raise
            kind = error_type(exc)
            current.add_event(
                "exception",
                {
                    "exception.type": kind,
                    "exception.message": WITHHELD,
                    "exception.stacktrace": described(exc),
                },
            )
            current.set_status(api.trace.Status(api.trace.StatusCode.ERROR, kind))
            raise


WITHHELD = "message withheld: it may quote a question, an answer or a transcript"
"""What spans and logs say instead of an exception's message."""


def error_type(exc: BaseException) -> str:
    """The exception's class, qualified by its module unless it is a built-in one."""
    kind = type(exc)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def described(exc: BaseException) -> str:
    """A traceback of ``exc`` without its message or its chained exceptions' (any of them may quote
    a question, an answer or a transcript): the frames it passed, then its class. What log records
    and spans carry for a failure."""
    frames = "".join(traceback.format_tb(exc.__traceback__))
    return f"Traceback (most recent call last):\n{frames}{error_type(exc)} ({WITHHELD})"


def outcome(current: Any, value: str, **values: Any) -> None:
    """Set the span's ``turnstate.outcome`` (and other allowed attributes); no-op without a span."""
    if current is not None:
        current.set_attributes(attributes({"outcome": value, **values}))


def record(name: str, value: float = 1, **values: Any) -> None:
    """Add ``value`` to the counter ``name``, or record it in the histogram ``name``."""
    api = _api()
    if api is None:
        return
    instrument = api.instruments[name]
    kept = attributes(values)
    if hasattr(instrument, "add"):
        instrument.add(value, kept)
    else:
        instrument.record(value, kept)


def traceparent() -> str | None:
    """The current trace context as a W3C ``traceparent`` (what the ledger stores with an answer)."""
    api = _api()
    if api is None:
        return None
    carrier: dict[str, str] = {}
    api.w3c.inject(carrier)
    return carrier.get("traceparent")


def link_current(parent: str | None) -> None:
    """Link the current span to the trace of ``parent`` (a ``traceparent``): a continuation to
    the answer it continues, recorded once the pause is read. No-op without one of them."""
    api = _api()
    if api is None or not parent:
        return
    for link in _links(api, parent):
        api.trace.get_current_span().add_link(link.context)


def _links(api: Any, parent: str | None) -> list[Any]:
    if not parent:
        return []
    context = api.trace.get_current_span(api.w3c.extract({"traceparent": parent})).get_span_context()
    return [api.trace.Link(context)] if context.is_valid else []
