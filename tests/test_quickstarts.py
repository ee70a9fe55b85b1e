"""The README's three quickstarts, run as written in a fresh ``django-admin startproject``.

Each test copies the README's install section and one quickstart into an empty directory: every
``sh`` block runs, in order, in one bash script; a ``python`` block whose first line names a file
creates it (or, for ``...: add at the end``, appends to it). Two things differ from a reader's
terminal: ``git clone`` and ``pip install`` lines are skipped (this interpreter's packages and this
checkout stand in for them), and the server's port 8000 becomes a free one. The server started
with ``&`` is stopped with the script's process group.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.demo_runs import only_on_sqlite, this_tree

pytestmark = only_on_sqlite

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
BLOCK = re.compile(r"^```(?P<lang>sh|python)\n(?P<code>.*?)^```$", re.MULTILINE | re.DOTALL)
SKIPPED = ("git clone ", "pip install ")


def section(name: str) -> str:
    return README.split(f"<!-- --8<-- [start:{name}] -->", 1)[1].split(f"<!-- --8<-- [end:{name}] -->", 1)[0]


def steps(*names: str) -> list[tuple[str, str]]:
    return [(match["lang"], match["code"]) for name in names for match in BLOCK.finditer(section(name))]


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_quickstart(name: str, workdir: Path) -> str:
    """Apply the install section and quickstart ``name`` in ``workdir``; what the shell printed."""
    port = str(free_port())
    script = ["set -euo pipefail"]
    for lang, code in steps("install", name):
        if lang == "sh":
            lines = [line for line in code.splitlines() if not line.startswith(SKIPPED)]
            script.append("\n".join(lines).replace("127.0.0.1:8000", f"127.0.0.1:{port}"))
            continue
        first = code.splitlines()[0]
        path = first.removeprefix("# ").split(":", 1)[0]
        if first.endswith(": add at the end"):
            script.append(f"cat >> {path} <<'QUICKSTART_EOF'\n\n{code}QUICKSTART_EOF")
        else:
            script.append(f"cat > {path} <<'QUICKSTART_EOF'\n{code}QUICKSTART_EOF")
    body = "\n".join(script)
    env = this_tree(
        {
            key: value
            for key, value in os.environ.items()
            if key not in {"DJANGO_SETTINGS_MODULE", "DATABASE_URL"}
        }
    )
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    log = workdir / "quickstart.log"
    with log.open("w") as out:
        # A file, not a pipe: the server left running in the background keeps a pipe open.
        process = subprocess.Popen(
            ["bash", "-c", body],
            cwd=workdir,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            returncode = process.wait(timeout=240)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
    output = log.read_text()
    assert returncode == 0, body + "\n----\n" + output[-4000:]
    return output


def expected(name: str) -> list[str]:
    """The lines the quickstart's ``text`` block says the reader will see (``…`` stands for an id)."""
    block = re.search(r"^```text\n(.*?)^```$", section(name), re.MULTILINE | re.DOTALL)
    assert block is not None
    return block.group(1).splitlines()


def shows(output: str, line: str) -> bool:
    pattern = ".*?".join(re.escape(part) for part in line.split("…"))
    return re.search(pattern, output) is not None


@pytest.mark.parametrize("name", ["quickstart-plain", "quickstart-langgraph", "quickstart-pydantic-ai"])
def test_the_quickstart_runs_as_written_in_a_fresh_project(name: str, tmp_path: Path) -> None:
    output = run_quickstart(name, tmp_path)
    for line in expected(name):
        assert shows(output, line), f"{name}: {line!r} not in\n{output[-4000:]}"
    assert "turnstate.E" not in output and "Traceback" not in output
