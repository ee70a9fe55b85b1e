"""The README's five quickstarts, run as written in a fresh ``django-admin startproject``.

Each run copies the README's install section and one quickstart into an empty directory: every
``sh`` block runs, in order, in one bash script; a ``python`` block whose first line names a file
creates it (or, for ``...: add at the end``, appends to it). Two things differ from a reader's
terminal: ``git clone`` and ``pip install`` lines are skipped (this interpreter's packages and this
checkout stand in for them), and the server's port 8000 becomes a free one. The server started
with ``&`` is stopped with the script's process group. The five run side by side, each in its
own directory on its own SQLite file, and a sixth follows all five, one after the other, in one
project: a reader who tries more than one keeps every agent they added. What each quickstart
prints is compared, line by line, with the output its ``text`` block shows.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import sqlite3
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
    "quickstart-google-adk",
)
ALL = "all-in-one-project"
AGAIN = ("quickstart-langgraph", "quickstart-pydantic-ai")
"""Run again in that project once all five were followed: the earlier agents must still continue."""
SECTION_START = "=== section {} ==="  # echoed between sections: where each one's output begins


def section(name: str) -> str:
    return README.split(f"<!-- --8<-- [start:{name}] -->", 1)[1].split(f"<!-- --8<-- [end:{name}] -->", 1)[0]


def steps(*names: str) -> list[tuple[str, str]]:
    return [(match["lang"], match["code"]) for name in names for match in BLOCK.finditer(section(name))]


def script_of(names: tuple[str, ...], port: int, again: tuple[str, ...] = ()) -> str:
    """The install section and the quickstarts ``names``, in order, as one bash script; then the
    commands of the quickstarts ``again`` once more, each on a new run (``start('<id>-again')``)."""
    script = ["set -euo pipefail"]
    sections = [(name, False) for name in ("install", *names)] + [(name, True) for name in again]
    for name, repeated in sections:
        script.append(f"echo '{SECTION_START.format(name + ' again' if repeated else name)}'")
        for lang, code in steps(name):
            if lang == "sh":
                lines = [line for line in code.splitlines() if not line.startswith(SKIPPED)]
                command = "\n".join(lines).replace("127.0.0.1:8000", f"127.0.0.1:{port}")
                if repeated:
                    command = re.sub(r"start\('([\w-]+)'\)", r"start('\1-again')", command)
                script.append(command)
                continue
            if repeated:
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
    workdir: Path
    process: subprocess.Popen[bytes]

    def output(self) -> str:
        """What the shell printed, once it has finished (its background server is then stopped)."""
        try:
            returncode = self.process.wait(timeout=600)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
        printed = (self.workdir / "quickstart.log").read_text()
        assert returncode == 0, self.script + "\n----\n" + printed[-4000:]
        return printed

    def printed_by(self, name: str) -> list[str]:
        """The lines section ``name``'s commands printed."""
        after = self.output().split(SECTION_START.format(name) + "\n", 1)[1]
        return after.split("=== section ", 1)[0].splitlines()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Run]]:
    """All the runs started at once, each in a directory and process group of its own."""
    env = this_tree(
        {
            key: value
            for key, value in os.environ.items()
            if key not in {"DJANGO_SETTINGS_MODULE", "DATABASE_URL"}
        }
    )
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    plans = {**{name: ((name,), ()) for name in QUICKSTARTS}, ALL: (QUICKSTARTS, AGAIN)}
    with contextlib.ExitStack() as held:  # distinct free ports: held until all are chosen
        probes = [held.enter_context(socket.socket()) for _ in plans]
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        ports = [int(probe.getsockname()[1]) for probe in probes]
    started: dict[str, Run] = {}
    for (name, (names, again)), port in zip(plans.items(), ports, strict=True):
        workdir = tmp_path_factory.mktemp(name)
        script = script_of(names, port, again)
        with (workdir / "quickstart.log").open("wb") as out:  # a file: the server would hold a pipe open
            process = subprocess.Popen(
                ["bash", "-c", script],
                cwd=workdir,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        started[name] = Run(script, workdir, process)
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


def matches(shown: str, printed: str) -> bool:
    pattern = ".*?".join(re.escape(part) for part in shown.split("…"))
    return re.fullmatch(pattern, printed) is not None


def assert_prints_what_the_readme_shows(name: str, printed: list[str]) -> None:
    shown = expected(name)
    report = f"{name}: the README shows\n" + "\n".join(shown) + "\n---- and it printed\n" + "\n".join(printed)
    assert len(printed) == len(shown), report
    for line, out in zip(shown, printed, strict=True):
        assert matches(line, out), report


@pytest.mark.parametrize("name", QUICKSTARTS)
def test_the_quickstart_runs_as_written_in_a_fresh_project(name: str, runs: dict[str, Run]) -> None:
    output = runs[name].output()
    assert "turnstate.E" not in output and "Traceback" not in output
    assert_prints_what_the_readme_shows(name, runs[name].printed_by(name))


def test_all_five_quickstarts_in_one_project_continue_each_agent(runs: dict[str, Run]) -> None:
    """Each quickstart adds to one ``TURNSTATE``: once the last is followed, a new run of an earlier
    one's graph or agent is still continued by the worker, and so are the plain pauses."""
    output = runs[ALL].output()
    assert "turnstate.E" not in output and "Traceback" not in output
    for name in QUICKSTARTS:
        assert_prints_what_the_readme_shows(name, runs[ALL].printed_by(name))
    for name in AGAIN:
        assert_prints_what_the_readme_shows(name, runs[ALL].printed_by(f"{name} again"))


@pytest.mark.parametrize("name", [*QUICKSTARTS, ALL])
def test_the_quickstart_database_is_in_wal_mode(name: str, runs: dict[str, Run]) -> None:
    """A web server and a worker share the SQLite file: WAL, as docs/databases.md recommends."""
    runs[name].output()
    database = runs[name].workdir / "mysite" / "db.sqlite3"  # startproject's, beside manage.py
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_the_langgraph_quickstart_refuses_an_answer_off_its_schema(runs: dict[str, Run]) -> None:
    """The interrupt declares its answer's schema: a wrong answer is a 400 and the pause waits."""
    commands = "\n".join(code for lang, code in steps("quickstart-langgraph") if lang == "sh")
    assert '\\"answer\\": \\"yes\\"' in commands
    printed = runs["quickstart-langgraph"].printed_by("quickstart-langgraph")
    assert printed[0].startswith('{"answer":['), printed
    assert matches('{"jti":"…","status":"answered","resumable":true}', printed[1]), printed


def test_every_quickstart_answers_over_http_and_continues_on_the_worker() -> None:
    for name in QUICKSTARTS:
        commands = "\n".join(code for lang, code in steps(name) if lang == "sh")
        assert "curl " in commands and "/api/turnstate/pauses/resume/" in commands, name
        assert "manage.py db_worker" in commands, name
        settings = [code for lang, code in steps(name) if lang == "python" and "settings.py" in code]
        assert settings and all(code.splitlines()[0].endswith(": add at the end") for code in settings), name
        assert "TURNSTATE = " not in "\n".join(settings), f"{name} must add to TURNSTATE, not replace it"
    install = "\n".join(code for _lang, code in steps("install"))
    assert "django-admin startproject" in install and "manage.py migrate " in install
    assert "migrate turnstate_app" not in install and "LANGGRAPH_STRICT_MSGPACK" in install
    assert '"RESUME_HANDLER"' in install and '"AGENTS"' in install
