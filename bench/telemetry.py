#!/usr/bin/env python
"""What the app's own spans and metrics cost: ``mint_pause`` and ``resume_pause`` with OpenTelemetry's
SDK recording (a ``SimpleSpanProcessor`` into an in-memory exporter, an in-memory metric reader)
against the same calls with the hooks off, interleaved in one process; and the hooks alone when
the API is absent, in a loop.

A benchmark, not a test: it prints a table, writes ``bench/results/telemetry-<vendor>.json`` and
exits 0. Run it from the repository root::

    .venv/bin/python bench/telemetry.py --database postgres://postgres@127.0.0.1:5432/turnstate_bench_otel
    .venv/bin/python bench/telemetry.py --database sqlite
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.common import (  # noqa: E402 - needs the repository root on sys.path
    RESULTS_DIR,
    configure_django,
    ensure_postgres_database,
    make_target,
    make_transcript,
    median,
    write_json,
)

TARGET_RATIO = 1.10


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", default="postgres://postgres@127.0.0.1:5432/turnstate_bench_otel")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--n", type=int, default=200, help="mints (and resumes) per round and mode")
    args = parser.parse_args(argv)
    target = make_target(args.database)
    if target.conninfo:
        ensure_postgres_database(target.conninfo)
    configure_django(target)

    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from turnstate_app import telemetry
    from turnstate_app.pauses import mint_pause, resume_pause

    spans = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(spans))
    trace.set_tracer_provider(tracing)
    metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
    recording = telemetry._api  # noqa: SLF001 - the bench switches the app's own hooks off and on

    prompt, messages = make_transcript(2048)
    counter = iter(range(10**9))

    def mint() -> Any:
        i = next(counter)
        return mint_pause(
            run_id=f"run-{i}",
            session_id="s",
            thread_id=f"otel-{i}",
            checkpoint_id="cp",
            scope_hash="h",
            tool_call_id=f"call-{i}",
            name="ask_user",
            request={"question": "Which date?"},
            prompt=prompt,
            messages=messages,
        )

    def timed(mode: str) -> dict[str, float]:
        telemetry._api = recording if mode == "on" else (lambda: None)  # type: ignore[method-assign,assignment]  # noqa: SLF001
        started = time.perf_counter_ns()
        tokens = [mint().token for _ in range(args.n)]
        minted = time.perf_counter_ns()
        for token in tokens:
            resume_pause(token, "yes")
        done = time.perf_counter_ns()
        spans.clear()
        return {"mint": (minted - started) / args.n / 1000, "resume": (done - minted) / args.n / 1000}

    for mode in ("off", "on"):  # warm-up
        timed(mode)
    rounds: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
    for number in range(args.rounds):
        for mode in ("off", "on") if number % 2 == 0 else ("on", "off"):
            rounds[mode].append(timed(mode))
    telemetry._api = recording  # type: ignore[method-assign]  # noqa: SLF001

    ratios = {
        op: median([on[op] / off[op] for on, off in zip(rounds["on"], rounds["off"], strict=True)])
        for op in ("mint", "resume")
    }
    # The hooks without the API: what every call pays when opentelemetry-api is not installed.
    telemetry._api = lambda: None  # type: ignore[method-assign,assignment]  # noqa: SLF001
    loops = 200_000
    started = time.perf_counter_ns()
    for _ in range(loops):
        with telemetry.span("turnstate.resume", jti="x") as current:
            telemetry.outcome(current, "answered")
            telemetry.record("turnstate.pauses.answered")
    noop_ns = (time.perf_counter_ns() - started) / loops
    result = {
        "database": target.vendor,
        "rounds": args.rounds,
        "n": args.n,
        "median_us": {
            mode: {op: round(median([r[op] for r in rounds[mode]]), 1) for op in ("mint", "resume")}
            for mode in rounds
        },
        "ratio_on_to_off": {op: round(value, 3) for op, value in ratios.items()},
        "target_ratio": TARGET_RATIO,
        "noop_hooks_ns_per_call": round(noop_ns, 1),
    }
    print(f"database: {target.vendor}; {args.rounds} interleaved rounds of {args.n}")
    for op in ("mint", "resume"):
        off, on = result["median_us"]["off"][op], result["median_us"]["on"][op]
        ratio = f"ratio {ratios[op]:.3f} (target <= {TARGET_RATIO})"
        print(f"  {op:<7} off {off:8.1f} us   on {on:8.1f} us   {ratio}")
    print(f"  no-op hooks (span + outcome + record), API absent: {noop_ns:.0f} ns per call")
    write_json(RESULTS_DIR / f"telemetry-{target.vendor}.json", result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
