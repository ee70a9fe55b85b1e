"""A process's start with the four integrations installed, against the core alone.

Every process of a host (each ``manage.py`` command, worker and server) runs ``django.setup()``,
which loads each installed app's models, ``ready()`` and ``admin`` module. The integrations load
their framework when they first run, so installing them should cost a process that never uses
them little. Each round starts two fresh interpreters, one per configuration (the order alternates
round by round), each running ``django.setup()`` with the same project settings but the apps:

- ``core``: the admin, auth, sessions, turnstate_app (the baseline);
- ``integrations``: the same and the LangGraph, PydanticAI, OpenAI Agents SDK and Google ADK apps.

Reported: the median over the rounds of each process's wall time (spawn to exit) and of its
``django.setup()`` alone, the ratio integrations / core, and the framework modules each process
ended up holding (none are expected). A first round is a warm-up and dropped.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import busy_neighbours, finish_environment, median, write_json  # noqa: E402

INTEGRATIONS = [
    "turnstate_app.contrib.langgraph",
    "turnstate_app.contrib.pydantic_ai",
    "turnstate_app.contrib.openai_agents",
    "turnstate_app.contrib.google_adk",
]
FRAMEWORKS = ("langgraph", "langchain_core", "pydantic_ai", "agents", "openai", "google.adk")
CONFIGURATIONS = ("core", "integrations")

CHILD = """
import json, sys, time
started = time.perf_counter()
import django
from django.conf import settings
settings.configure(
    SECRET_KEY="bench-startup",
    USE_TZ=True,
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
    INSTALLED_APPS=[
        "django.contrib.admin",
        "django.contrib.auth",
        "django.contrib.contenttypes",
        "django.contrib.sessions",
        "django.contrib.messages",
        "rest_framework",
        "turnstate_app",
        *__APPS__,
    ],
)
imported = time.perf_counter()
django.setup()
done = time.perf_counter()
held = sorted({f for f in __FRAMEWORKS__ for m in sys.modules if m == f or m.startswith(f + ".")})
print(json.dumps({"setup_s": done - imported, "in_process_s": done - started, "frameworks": held}))
"""


def start(configuration: str) -> dict[str, Any]:
    """One fresh interpreter running ``django.setup()`` with ``configuration``'s apps."""
    apps = INTEGRATIONS if configuration == "integrations" else []
    code = CHILD.replace("__APPS__", repr(apps)).replace("__FRAMEWORKS__", repr(FRAMEWORKS))
    began = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False, timeout=120
    )
    wall = time.perf_counter() - began
    if result.returncode != 0:
        raise SystemExit(f"the {configuration} process failed:\n{result.stderr}")
    return {"wall_s": wall, **json.loads(result.stdout)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--rounds", type=int, default=11, help="timed rounds (after one warm-up round)")
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "results" / "startup.json")
    args = parser.parse_args(argv)
    import django

    env: dict[str, Any] = {
        "python": sys.version.split()[0],
        "django": django.get_version(),
        "cpu_count": os.cpu_count(),
        "loadavg_start": list(os.getloadavg()),
        "busy_neighbours_start": busy_neighbours(),
        "args": {"rounds": args.rounds},
    }
    started = time.monotonic()
    samples: dict[str, list[dict[str, Any]]] = {name: [] for name in CONFIGURATIONS}
    for round_no in range(args.rounds + 1):
        order = CONFIGURATIONS if round_no % 2 == 0 else CONFIGURATIONS[::-1]
        for configuration in order:
            sample = start(configuration)
            if round_no > 0:
                samples[configuration].append(sample)
    finish_environment(env, started)

    figures: dict[str, dict[str, Any]] = {
        name: {
            "wall_ms": median([s["wall_s"] for s in taken]) * 1000,
            "setup_ms": median([s["setup_s"] for s in taken]) * 1000,
            "frameworks_imported": sorted({f for s in taken for f in s["frameworks"]}),
        }
        for name, taken in samples.items()
    }
    ratios = {key: figures["integrations"][key] / figures["core"][key] for key in ("wall_ms", "setup_ms")}
    print(f"Python {env['python']} | Django {env['django']} | {env['cpu_count']} CPUs | rounds {args.rounds}")
    print(f"{'configuration':<14} {'process (ms)':>13} {'django.setup() (ms)':>20}  frameworks imported")
    for name in CONFIGURATIONS:
        row = figures[name]
        imported = ", ".join(row["frameworks_imported"]) or "none"
        print(f"{name:<14} {row['wall_ms']:>13.1f} {row['setup_ms']:>20.1f}  {imported}")
    print(f"integrations / core: process {ratios['wall_ms']:.2f}x, django.setup() {ratios['setup_ms']:.2f}x")
    write_json(args.output, {"environment": env, "figures": figures, "ratios": ratios})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
