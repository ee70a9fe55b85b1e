"""The README's four quickstarts, run as written in a fresh ``django-admin startproject``.

Each run copies the README's install section and one quickstart into an empty directory: every
``sh`` block runs, in order, in one bash script; a ``python`` block whose first line names a file
creates it (or, for ``...: add at the end``, appends to it). Two things differ from a reader's
terminal: ``git clone`` and ``pip install`` lines are skipped (this interpreter's packages and this
checkout stand in for them), and the server's port 8000 becomes a free one. The server started
with ``&`` is stopped with the script's process group. The four run side by side, each in its
own directory on its own SQLite file, and each test reads its own.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.demo_runs import only_on_sqlite, this_tree

pytestmark = only_on_sqlite

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
BLOCK = re.compile(r"^```(?P<lang>sh|python)\n(?P<code>.*?)^```$", re.MULTILINE | re.DOTALL)
SKIPPED = ("git clone ", "pip install ")
QUICKSTARTS = (
    "quickstart-plain",
    "quickstart-langgraph",
    "quickstart-pydantic-ai",
    "quickstart-openai-agents",
)


def section(name: str) -> str:
    return README.split(f"<!-- --8<-- [start:{name}] -->", 1)[1].split(f"<!-- --8<-- [end:{name}] -->", 1)[0]


def steps(*names: str) -> list[tuple[str, str]]:
    return [(match["lang"], match["code"]) for name in names for match in BLOCK.finditer(section(name))]


def script_of(name: str, port: int) -> str:
    """The install section and quickstart ``name`` as one bash script."""
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
    return "\n".join(script)


@dataclass
class Run:
    script: str
    log: Path
    process: subprocess.Popen[bytes]

    def output(self) -> str:
        """What the shell printed, once it has finished (its background server is then stopped)."""
        try:
            returncode = self.process.wait(timeout=300)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
        printed = self.log.read_text()
        assert returncode == 0, self.script + "\n----\n" + printed[-4000:]
        return printed


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Run]]:
    """All the quickstarts started at once, each in a directory and process group of its own."""
    env = this_tree(
        {
            key: value
            for key, value in os.environ.items()
            if key not in {"DJANGO_SETTINGS_MODULE", "DATABASE_URL"}
        }
    )
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    with contextlib.ExitStack() as held:  # distinct free ports: held until all are chosen
        probes = [held.enter_context(socket.socket()) for _ in QUICKSTARTS]
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        ports = [int(probe.getsockname()[1]) for probe in probes]
    started: dict[str, Run] = {}
    for name, port in zip(QUICKSTARTS, ports, strict=True):
        workdir = tmp_path_factory.mktemp(name)
        script = script_of(name, port)
        log = workdir / "quickstart.log"
        with log.open("wb") as out:  # a file, not a pipe: the background server keeps a pipe open
            process = subprocess.Popen(
                ["bash", "-c", script],
                cwd=workdir,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        started[name] = Run(script, log, process)
    yield started
    for run in started.values():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.process.pid, signal.SIGTERM)
        run.process.wait(timeout=30)


def expected(name: str) -> list[str]:
    """The lines the quickstart's ``text`` block says the reader will see (``…`` stands for an id)."""
    block = re.search(r"^```text\n(.*?)^```$", section(name), re.MULTILINE | re.DOTALL)
    assert block is not None
    return block.group(1).splitlines()


def shows(output: str, line: str) -> bool:
    pattern = ".*?".join(re.escape(part) for part in line.split("…"))
    return re.search(pattern, output) is not None


@pytest.mark.parametrize("name", QUICKSTARTS)
def test_the_quickstart_runs_as_written_in_a_fresh_project(name: str, runs: dict[str, Run]) -> None:
    output = runs[name].output()
    for line in expected(name):
        assert shows(output, line), f"{name}: {line!r} not in\n{output[-4000:]}"
    assert "turnstate.E" not in output and "Traceback" not in output


def test_every_quickstart_answers_over_http_and_continues_on_the_worker() -> None:
    for name in QUICKSTARTS:
        commands = "\n".join(code for lang, code in steps(name) if lang == "sh")
        assert "curl " in commands and "/api/turnstate/pauses/resume/" in commands, name
        assert "manage.py db_worker" in commands, name
        code = "\n".join(code for lang, code in steps(name) if lang == "python")
        assert '"RESUME_HANDLER"' in code, name
    install = "\n".join(code for _lang, code in steps("install"))
    assert "django-admin startproject" in install and "manage.py migrate " in install
    assert "migrate turnstate_app" not in install and "LANGGRAPH_STRICT_MSGPACK" in install
