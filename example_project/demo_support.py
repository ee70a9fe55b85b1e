"""What every demo shares, so each demo script holds only its story.

A demo starts a real HTTP server and a task worker as separate processes on a fresh database,
talks to them over HTTP as a person would, and checks every step it shows: on the first
surprise it stops with ``DemoFailedError`` naming the step, exits non-zero, and stops every
process it started, also on Ctrl-C or SIGTERM. ``demo.py``, ``demo_langgraph.py`` and
``demo_pydantic_ai.py`` each subclass ``Demo`` with their own ``run()`` and call ``main()``.
"""

from __future__ import annotations

import argparse
import email
import email.message
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MANAGE = str(HERE / "manage.py")
RESUME = "/api/turnstate/pauses/resume/"


class DemoFailedError(Exception):
    def __init__(self, step: str, reason: str) -> None:
        super().__init__(f"step '{step}' failed: {reason}")


def say(text: str = "") -> None:
    print(text, flush=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def tail(path: Path, lines: int = 8) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class Demo:
    """The processes, HTTP and database steps a demo stands on; subclasses write ``run()``."""

    title = "turnstate demo"

    def __init__(self, database_url: str, port: int) -> None:
        self.database_url = database_url
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.logs = Path(tempfile.mkdtemp(prefix="turnstate-demo-"))
        self.mail = self.logs / "mail"  # what NOTIFY e-mailed, one file per process (filebased backend)
        self.env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "PYTHONUNBUFFERED": "1",
            "DEMO_MAIL_DIR": str(self.mail),
        }
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.started = time.monotonic()

    def run(self) -> None:
        raise NotImplementedError

    # -- processes ----------------------------------------------------------------------

    def manage(self, step: str, *args: str) -> str:
        try:
            result = subprocess.run(
                [sys.executable, MANAGE, *args], env=self.env, capture_output=True, text=True, timeout=120
            )
        except subprocess.TimeoutExpired:
            raise DemoFailedError(step, f"manage.py {args[0]} did not finish within 120 s") from None
        if result.returncode != 0:
            output = (result.stderr or result.stdout).strip().splitlines()
            raise DemoFailedError(step, output[-1] if output else f"exit code {result.returncode}")
        return result.stdout

    def manage_pause(self, step: str, command: str, jti: str) -> str:
        """Run a command that takes a pause's jti: ``--`` first, since a jti may begin with "-"."""
        return self.manage(step, command, "--", jti)

    def start(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        log = (self.logs / f"{name}.log").open("wb")
        process = subprocess.Popen(
            [sys.executable, MANAGE, *args], env=self.env, stdout=log, stderr=subprocess.STDOUT
        )
        self.processes[name] = process
        return process

    def require_alive(self, name: str, step: str) -> None:
        process = self.processes[name]
        if process.poll() is not None:
            raise DemoFailedError(
                step, f"the {name} exited with code {process.returncode}:\n{tail(self.logs / f'{name}.log')}"
            )

    def stop_all(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    # -- the opening every demo shares --------------------------------------------------

    def prepare(self) -> dict[str, Any]:
        """Announce the demo, give it an empty migrated database, and return the demo users."""
        self.started = time.monotonic()
        say(f"{self.title} on {self.database_url.split('@')[-1]}  (logs: {self.logs})")
        say()
        if self.database_url.startswith(("postgres://", "postgresql://")):
            create_postgres_database(self.database_url)
        self.manage("prepare the database", "migrate", "--no-input")
        if not self.database_url.startswith("sqlite"):
            self.manage("empty the database", "flush", "--no-input")
        return dict(json.loads(self.manage("create the demo users", "demo_users")))

    def start_server_and_worker(self) -> tuple[subprocess.Popen[bytes], subprocess.Popen[bytes]]:
        """Start the HTTP server and the task worker, and return once both are up."""
        server = self.start("server", "runserver", f"127.0.0.1:{self.port}", "--noreload")
        worker = self.start("worker", "db_worker", "--interval", "0.2", "--no-startup-delay", "--no-reload")
        self.wait_for_server("start the HTTP server")
        self.require_alive("worker", "start the worker")
        return server, worker

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    # -- HTTP ---------------------------------------------------------------------------

    def http(self, method: str, path: str, token: str, body: Any = None) -> tuple[int, Any]:
        request = urllib.request.Request(
            self.base + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=15) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def wait_for_server(self, step: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.require_alive("server", step)
            try:
                with urllib.request.urlopen(self.base + "/api/schema/", timeout=2):
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)
        raise DemoFailedError(step, f"the server did not answer on {self.base} within {timeout:.0f} s")

    def mailed_link(self, step: str, to: str, token: str) -> str:
        """The answer link for ``token`` in an e-mail to ``to``, as the person reads it."""
        for message in mailed(self.mail):
            payload = message.get_payload(decode=True)
            body = (
                payload.decode(message.get_content_charset() or "utf-8") if isinstance(payload, bytes) else ""
            )
            links = [line.strip() for line in body.splitlines() if line.strip().endswith(f"/t/{token}/")]
            if message["To"] == to and links:
                return links[0]
        raise DemoFailedError(step, f"no e-mail to {to} holds the link of that pause (in {self.mail})")

    def status_of(self, path: str) -> tuple[int, str]:
        """GET ``path`` without following a redirect: the status and where it points."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)
        try:
            connection.request("GET", path)
            response = connection.getresponse()
            return response.status, response.getheader("Location") or ""
        finally:
            connection.close()

    # -- agent runs (example_project/demo_agents, /agents/runs/) -----------------------------

    def transcript(self, run_id: str, token: str, step: str) -> dict[str, Any]:
        status, body = self.http("GET", f"/agents/runs/{run_id}/", token)
        expect(step, status == 200, status, body)
        return dict(body)

    def wait_for_continuation(self, run_id: str, token: str, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.require_alive("worker", "continue the turn")
            run = self.transcript(run_id, token, "continue the turn")
            if run["status"] != "paused":
                expect("continue the turn", run["status"] == "continued", run)
                return run
            time.sleep(0.2)
        raise DemoFailedError(
            "continue the turn", f"the worker did not continue the run within {timeout:.0f} s"
        )


def mailed(folder: Path) -> list[email.message.Message]:
    """Every message Django's file-based e-mail backend wrote into ``folder``, oldest file first."""
    separator = "\n" + "-" * 79 + "\n"
    files = sorted(folder.glob("*.log"), key=lambda path: path.stat().st_mtime) if folder.is_dir() else []
    return [
        email.message_from_string(text.strip("\n"))
        for path in files
        for text in path.read_text().split(separator)
        if text.strip()
    ]


def create_postgres_database(url: str) -> None:
    """Create the named PostgreSQL database when it is missing (the server must be up)."""
    import psycopg
    from psycopg import sql

    server, name = url.rsplit("/", 1)
    try:
        with psycopg.connect(f"{server}/postgres", autocommit=True, connect_timeout=5) as connection:
            exists = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
            if not exists:
                connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.Error as error:
        raise DemoFailedError(
            "prepare the database", f"PostgreSQL at {server} is unreachable ({error})"
        ) from None


def expect(step: str, condition: bool, *seen: Any) -> None:
    if not condition:
        raise DemoFailedError(
            step, "unexpected result: " + " ".join(json.dumps(s, default=str) for s in seen)
        )


def short(message: dict[str, Any]) -> str:
    """One transcript message on one line."""
    if "tool_calls" in message:
        call = message["tool_calls"][0]
        return f"[{message['role']}] calls {call['name']}({json.dumps(call.get('arguments', {}))})"
    return f"[{message['role']}] {message.get('content')}"


def interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(demo_class: type[Demo], default_sqlite: Path, description: str | None) -> int:
    """Parse the command line, run the demo on a fresh database, and stop what it started."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL") or "")
    parser.add_argument("--port", type=int, default=int(os.environ.get("DEMO_PORT") or 0))
    options = parser.parse_args()
    database_url = options.database_url
    if not database_url:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{default_sqlite}{suffix}").unlink(missing_ok=True)  # a fresh database every run
        database_url = f"sqlite:///{default_sqlite}"
    demo = demo_class(database_url, options.port or free_port())
    signal.signal(signal.SIGTERM, interrupt)
    try:
        demo.run()
    except DemoFailedError as failure:
        say(f"\nDEMO FAILED: {failure}")
        return 1
    except KeyboardInterrupt:
        say("\nInterrupted; stopping what the demo started.")
        return 130
    finally:
        demo.stop_all()
    return 0
