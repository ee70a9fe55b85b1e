#!/usr/bin/env python
"""``lifecycle.py`` of an older checkout beside this one's: the mint's and the resume's ratios, new ÷ old.

Each side is its own ``bench/lifecycle.py`` run as a subprocess (its own code, its own database),
the two taking turns, old first in even pairs and new first in odd ones, so both meet the same
machine. What is compared is each side's ratio to its own port upsert, the unit of that run.
A benchmark, not a test: it prints each pair and the medians, and exits 0. From the repository root::

    git worktree add --detach /tmp/turnstate-old <commit>
    .venv/bin/python bench/lifecycle_against.py --old /tmp/turnstate-old --database sqlite
    .venv/bin/python bench/lifecycle_against.py --old /tmp/turnstate-old \\
        --database postgres://postgres@127.0.0.1:5432/turnstate_bench_against

A server URL names a database prefix: each side gets ``<name>_old`` / ``<name>_new``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
OPS = ("mint", "resume")


def database_for(url: str, side: str) -> str:
    return url if url == "sqlite" else f"{url}_{side}"


def run_side(checkout: Path, database: str, args: argparse.Namespace, output: Path) -> dict[str, float]:
    """One ``lifecycle.py`` run of ``checkout``; each operation's multiple of its port upsert."""
    command = [
        sys.executable,
        "bench/lifecycle.py",
        "--database",
        database,
        "--force",
        "--output",
        str(output),
    ]
    command += ["--n", str(args.n), "--repeat", str(args.repeat)]
    subprocess.run(command, cwd=checkout, check=True, capture_output=True)
    rows = {row["op"]: row for row in json.loads(output.read_text())["rows"]}
    return {op: float(rows[op]["x_upsert"]) for op in OPS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--old", type=Path, required=True, help="a checkout of the older commit")
    parser.add_argument("--database", required=True, help="'sqlite', or a postgres:// or mysql:// URL")
    parser.add_argument("--pairs", type=int, default=4, help="old and new runs, taking turns")
    parser.add_argument("--n", type=int, default=300, help="calls per operation per round, each run")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds, each run")
    args = parser.parse_args(argv)
    sides = {"old": args.old.resolve(), "new": REPO_ROOT}
    found: dict[str, dict[str, list[float]]] = {side: {op: [] for op in OPS} for side in sides}
    with tempfile.TemporaryDirectory() as scratch:
        for pair in range(args.pairs):
            order = ("old", "new") if pair % 2 == 0 else ("new", "old")
            for side in order:
                output = Path(scratch) / f"{side}-{pair}.json"
                ratios = run_side(sides[side], database_for(args.database, side), args, output)
                for op in OPS:
                    found[side][op].append(ratios[op])
            print(
                f"pair {pair + 1}: "
                + ", ".join(
                    f"{op} old {found['old'][op][-1]:.2f}x new {found['new'][op][-1]:.2f}x" for op in OPS
                ),
                flush=True,
            )
    for op in OPS:
        old, new = statistics.median(found["old"][op]), statistics.median(found["new"][op])
        pairs = [n / o for o, n in zip(found["old"][op], found["new"][op], strict=True)]
        print(
            f"{op}: old {old:.2f}x its upsert, new {new:.2f}x; new / old {new / old:.3f} "
            f"(pairs {min(pairs):.3f}-{max(pairs):.3f})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
