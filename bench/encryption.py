#!/usr/bin/env python
"""Encryption at rest: what it costs, measured with and without keys in the same run.

- ``mint_pause`` / ``resume_pause``: the median of single calls, keys off and on taking turns;
- the LangGraph saver's ``put`` / ``get_tuple`` of a checkpoint with a 2 KB channel value;
- ``turnstate_rotate_keys``' rate (rows/s, through :func:`turnstate_app.rotation.rotate` on the
  store's table) beside a bare ``MultiFernet.rotate`` loop over the same 2 KB values in the same
  process, and the process's peak RSS while rotating ``--rows`` and ten times as many rows.

Targets (issue "values encrypted at rest"): mint / resume at most 1.15x their clear cost, the
saver's 2 KB put / get_tuple at most 1.2x, rotation at least 0.5x the bare loop, RSS at 10x the
rows at most 1.1x. A benchmark, not a test: it prints a table, writes
``bench/results/encryption-<vendor>.json`` and exits 0. From the repository root::

    .venv/bin/python bench/encryption.py --database sqlite
    .venv/bin/python bench/encryption.py --database postgres://postgres@127.0.0.1:5432/turnstate_bench_enc

``--server-side-binding`` and ``--prepare-threshold N`` pass Django's PostgreSQL ``OPTIONS`` of those
names (the result's name says so).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
sys.path[:] = [p for p in sys.path if Path(p or os.curdir).resolve() != BENCH_DIR]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.common import (  # noqa: E402 - needs the repository root on sys.path
    RESULTS_DIR,
    configure_django,
    ensure_mysql_database,
    ensure_postgres_database,
    environment,
    finish_environment,
    make_target,
    median,
    server_version,
    write_json,
)

VALUE_BYTES = 2048
SAMPLE = 10_000


def rss_bytes() -> int:
    """The process's resident set now (Linux ``/proc/self/statm``)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def timed_us(fn: Callable[[], object]) -> float:
    started = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - started) / 1000


def keys_on(keys: list[str]) -> None:
    from django.conf import settings

    settings.TURNSTATE = {"ENCRYPTION_KEYS": keys}


MODES = ("clear", "encrypted")


def alternating(
    calls: int, key: str, step: Callable[[str, int], Callable[[], object]]
) -> dict[str, list[float]]:
    """Each call timed alone, the modes taking turns call by call (and swapping who goes first each
    call), so a burst of load on the machine weighs on both alike; the first tenth warms up."""
    samples: dict[str, list[float]] = {mode: [] for mode in MODES}
    warm = calls // 10
    for i in range(calls + warm):
        for mode in MODES if i % 2 == 0 else MODES[::-1]:
            keys_on([key] if mode == "encrypted" else [])
            took = timed_us(step(mode, i))
            if i >= warm:
                samples[mode].append(took)
    return samples


def ratios(samples: dict[str, dict[str, list[float]]]) -> dict[str, Any]:
    return {
        op: {
            "clear_us": median(found["clear"]),
            "encrypted_us": median(found["encrypted"]),
            "ratio": median(found["encrypted"]) / median(found["clear"]),
        }
        for op, found in samples.items()
    }


def lifecycle(calls: int, key: str) -> dict[str, Any]:
    from turnstate_app.pauses import mint_pause, resume_pause

    prompt = "p" * 1024
    messages = [{"role": "user", "content": "m" * 1024}]
    minted: dict[str, list[Any]] = {mode: [] for mode in MODES}

    def mint(mode: str, i: int) -> Callable[[], object]:
        return lambda: minted[mode].append(
            mint_pause(
                run_id="r",
                session_id="s",
                thread_id=f"bench-{uuid.uuid4().hex}",
                checkpoint_id="cp",
                scope_hash="h",
                tool_call_id=f"call-{i}",
                request={"question": "q" * 512},
                prompt=prompt,
                messages=messages,
            )
        )

    def resume(mode: str, i: int) -> Callable[[], object]:
        return lambda: resume_pause(minted[mode][i].token, {"ok": i})

    return ratios({"mint": alternating(calls, key, mint), "resume": alternating(calls, key, resume)})


def saver(calls: int, key: str) -> dict[str, Any]:
    from langgraph.checkpoint.base import empty_checkpoint

    from turnstate_app.contrib.langgraph import DjangoCheckpointSaver

    store = DjangoCheckpointSaver()
    threads = {mode: f"bench-{uuid.uuid4().hex}" for mode in MODES}
    configs: dict[str, list[Any]] = {mode: [] for mode in MODES}

    def put(mode: str, i: int) -> Callable[[], object]:
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"messages": f"{i:08d}" + "x" * (VALUE_BYTES - 8)}
        checkpoint["channel_versions"] = {"messages": f"{i + 1:032}.0"}
        config: Any = {"configurable": {"thread_id": threads[mode], "checkpoint_ns": ""}}
        versions: Any = {"messages": f"{i + 1:032}.0"}
        return lambda: configs[mode].append(store.put(config, checkpoint, {"step": i}, versions))

    def get(mode: str, i: int) -> Callable[[], object]:
        return lambda: store.get_tuple(configs[mode][i])

    return ratios({"put": alternating(calls, key, put), "get_tuple": alternating(calls, key, get)})


def fill(rows: int, key: str) -> list[str]:
    """``rows`` answer rows of 2 KB, encrypted with ``key``, written in batches; the first
    ``SAMPLE`` tokens (for the bare loop: holding them all would weigh on the RSS measured)."""
    from django.core.management.color import no_style
    from django.db import connection

    from turnstate_app.encryption import seal_text
    from turnstate_app.models import CheckpointMetadata
    from turnstate_app.ports.sealing import value_mac

    with connection.cursor() as cursor:  # emptied, not deleted from: no dead rows of an earlier size weigh
        for sql in connection.ops.sql_flush(no_style(), [CheckpointMetadata._meta.db_table]):
            cursor.execute(sql)
    keys_on([key])
    tokens: list[str] = []
    for start in range(0, rows, 1000):
        batch = []
        for i in range(start, min(rows, start + 1000)):
            value, key_id = seal_text(f'"{i:08d}' + "v" * (VALUE_BYTES - 10) + '"', thread_id="bench")
            if len(tokens) < SAMPLE:
                tokens.append(value)
            batch.append(
                CheckpointMetadata(
                    thread_id="bench",
                    checkpoint_id=str(i),
                    key=f"answer:{i}",
                    value=value,
                    encryption_key_id=key_id,
                    value_mac=value_mac("bench", str(i), f"answer:{i}", value, key_id),
                )
            )
        CheckpointMetadata.objects.bulk_create(batch)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:  # statistics and visibility map, as autovacuum keeps them
            cursor.execute(f'VACUUM ANALYZE "{CheckpointMetadata._meta.db_table}"')
    return tokens


def rotation(rows: int, batch_size: int, old: str, new: str) -> dict[str, Any]:
    from cryptography.fernet import Fernet, MultiFernet

    from turnstate_app.models import CheckpointMetadata
    from turnstate_app.rotation import rotate
    from turnstate_app.sealed_tables import SealedTable

    tokens = fill(rows, old)
    multi = MultiFernet([Fernet(new), Fernet(old)])
    started = time.perf_counter()
    for token in tokens:
        multi.rotate(token.encode("ascii"))
    bare = len(tokens) / (time.perf_counter() - started)
    del tokens
    keys_on([new, old])
    table = SealedTable(CheckpointMetadata, "value", identity=("thread_id", "checkpoint_id", "key"))
    peak = [rss_bytes()]
    started = time.perf_counter()
    counts = rotate(table, batch_size=batch_size, progress=lambda _: peak.append(rss_bytes()))
    ours = counts.rotated / (time.perf_counter() - started)
    return {
        "rows": rows,
        "rotated": counts.rotated,
        "bare_multifernet_rows_per_s": bare,
        "rotate_rows_per_s": ours,
        "ratio": ours / bare,
        "peak_rss_mb": max(peak) / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", default="sqlite")
    parser.add_argument("--calls", type=int, default=500, help="timed calls of each operation in each mode")
    parser.add_argument("--rows", type=int, default=10_000, help="rows rotated; then ten times as many")
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument(
        "--only", choices=("rotation",), help="only the rotation (rows/s and RSS; no mint, resume or saver)"
    )
    parser.add_argument(
        "--server-side-binding",
        action="store_true",
        help="PostgreSQL: Django's OPTIONS server_side_binding=True (values sent as parameters)",
    )
    parser.add_argument(
        "--prepare-threshold",
        type=int,
        help="PostgreSQL: Django's OPTIONS prepare_threshold (a statement run this often is prepared)",
    )
    args = parser.parse_args()
    started = time.time()
    target = make_target(args.database, args.prepare_threshold, server_side_binding=args.server_side_binding)
    if target.vendor == "postgresql":
        ensure_postgres_database(target.conninfo)
    if target.vendor == "mysql":
        ensure_mysql_database(target)
    configure_django(target, extra_apps=["turnstate_app.contrib.langgraph"])
    from cryptography.fernet import Fernet

    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    result: dict[str, Any] = {"environment": environment(target, server_version(target), args)}
    if args.only is None:
        result["lifecycle"] = lifecycle(args.calls, new)
        result["saver_2kb"] = saver(args.calls, new)
    result["rotation"] = [rotation(n, args.batch_size, old, new) for n in (args.rows, args.rows * 10)]
    result["rotation_rss_ratio"] = result["rotation"][1]["peak_rss_mb"] / result["rotation"][0]["peak_rss_mb"]
    finish_environment(result["environment"], started)
    print(f"{'operation':<22}{'clear us':>12}{'encrypted us':>14}{'ratio':>8}")
    for group in ("lifecycle", "saver_2kb") if args.only is None else ():
        for op, row in result[group].items():
            name = f"{group}.{op}"
            print(f"{name:<22}{row['clear_us']:>12.1f}{row['encrypted_us']:>14.1f}{row['ratio']:>8.2f}")
    for row in result["rotation"]:
        print(
            f"rotate {row['rows']:>8} rows: {row['rotate_rows_per_s']:>9.0f} rows/s, bare MultiFernet.rotate "
            f"{row['bare_multifernet_rows_per_s']:>9.0f}/s, ratio {row['ratio']:.2f}, "
            f"peak RSS {row['peak_rss_mb']:.0f} MB"
        )
    print(f"RSS at {args.rows * 10} rows / at {args.rows}: {result['rotation_rss_ratio']:.2f}")
    suffix = "" if args.only is None else f"-{args.only}"
    if args.server_side_binding:
        suffix += "-server-binding"
    if args.prepare_threshold is not None:
        suffix += f"-prepare-{args.prepare_threshold}"
    write_json(RESULTS_DIR / f"encryption-{target.vendor}{suffix}.json", result)


if __name__ == "__main__":
    main()
