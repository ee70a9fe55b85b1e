"""`make demo`: an agent asks a person, the person answers over HTTP, another process continues.

Starts a real HTTP server and a task worker as separate processes, runs the scripted agent,
answers over the REST API, and checks every step it shows. Exits non-zero, naming the step,
when anything goes wrong; stops everything it started, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
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
DEFAULT_SQLITE = HERE / "demo.sqlite3"


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
    def __init__(self, database_url: str, port: int) -> None:
        self.database_url = database_url
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.logs = Path(tempfile.mkdtemp(prefix="turnstate-demo-"))
        self.env = {**os.environ, "DATABASE_URL": database_url, "PYTHONUNBUFFERED": "1"}
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

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

    # -- the story ----------------------------------------------------------------------

    def run(self) -> None:
        started = time.monotonic()
        say(f"turnstate demo on {self.database_url.split('@')[-1]}  (logs: {self.logs})")
        say()
        if self.database_url.startswith(("postgres://", "postgresql://")):
            create_postgres_database(self.database_url)
        self.manage("prepare the database", "migrate", "--no-input")
        if not self.database_url.startswith("sqlite"):
            self.manage("empty the database", "flush", "--no-input")
        people = json.loads(self.manage("create the demo users", "demo_users"))
        alice, admin = people["tokens"]["alice"], people["tokens"]["admin"]

        server = self.start("server", "runserver", f"127.0.0.1:{self.port}", "--noreload")
        worker = self.start("worker", "db_worker", "--interval", "0.2", "--no-startup-delay", "--no-reload")
        self.wait_for_server("start the HTTP server")
        self.require_alive("worker", "start the worker")
        say(
            f"1. Started an HTTP server (pid {server.pid}, {self.base}) and a task worker (pid {worker.pid})."
        )

        first, second = json.loads(self.manage("run the agent", "run_agent", "--owner", "alice"))
        expect("run the agent", first["resumable"] is True and second["resumable"] is False, first, second)
        say("2. The agent paused twice, in a separate process that has now exited:")
        say(
            "   pause 1  ask_user  'Which week suits the team: May 4 or May 11?'"
            f"  resumable={first['resumable']}"
        )
        say(
            f"   pause 2  interrupt 'Approve a EUR 2,400 deposit?'  resumable={second['resumable']}"
            "  (its turn-state write failed)"
        )

        before = self.transcript(first["run_id"], alice, "read the transcript")
        say(f"3. Transcript before the answer ({len(before['transcript'])} messages), last one:")
        say(f"   {short(before['transcript'][-1])}")

        status, body = self.http(
            "POST", "/api/turnstate/pauses/resume/", alice, {"token": first["token"], "answer": "May 11"}
        )
        expect(
            "answer pause 1",
            status == 200 and body.get("status") == "answered" and body.get("resumable") is True,
            status,
            body,
        )
        say(f"4. alice answered 'May 11' over HTTP: {status} {json.dumps(body)}")

        after = self.wait_for_continuation(first["run_id"], alice)
        expect("continue the turn", after["continued_by_pid"] == worker.pid, after)
        say(
            f"5. The worker (pid {after['continued_by_pid']}) rebuilt the turn from the database alone"
            f" and continued it ({len(after['transcript'])} messages):"
        )
        for message in after["transcript"][len(before["transcript"]) :]:
            say(f"   + {short(message)}")

        status, body = self.http(
            "POST", "/api/turnstate/pauses/resume/", alice, {"token": first["token"], "answer": "May 4"}
        )
        expect(
            "refuse a second answer", status == 409 and body.get("code") == "already_answered", status, body
        )
        say(f"6. A second answer with the same token is refused: {status} {json.dumps(body)}")

        listing = self.manage("list unresumable pauses", "turnstate_unresumable")
        expect("list unresumable pauses", second["jti"] in listing and first["jti"] not in listing, listing)
        say("7. Operators see the pause that cannot be continued (manage.py turnstate_unresumable):")
        for line in filter(str.strip, listing.strip().splitlines()):
            say(f"   {line}")

        status, body = self.http("GET", "/api/turnstate/pauses/unresumable/", admin)
        expect(
            "list unresumable pauses over HTTP",
            status == 200 and [row.get("jti") for row in body.get("results", [])] == [second["jti"]],
            status,
            body,
        )

        say()
        say(f"Done in {time.monotonic() - started:.1f} s. To look around in the admin:")
        say(f"   DATABASE_URL={self.database_url} .venv/bin/python example_project/manage.py runserver")
        say(
            "   then http://127.0.0.1:8000/admin/  user: admin  password: "
            f"{people['admin_password']}  (Swagger UI: /api/docs/)"
        )

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
    if "tool_calls" in message:
        call = message["tool_calls"][0]
        return f"[{message['role']}] calls {call['name']}({json.dumps(call.get('arguments', {}))})"
    return f"[{message['role']}] {message.get('content')}"


def interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL") or "")
    parser.add_argument("--port", type=int, default=int(os.environ.get("DEMO_PORT") or 0))
    options = parser.parse_args()
    database_url = options.database_url
    if not database_url:
        DEFAULT_SQLITE.unlink(missing_ok=True)  # a fresh database every run
        for suffix in ("-wal", "-shm"):
            Path(f"{DEFAULT_SQLITE}{suffix}").unlink(missing_ok=True)
        database_url = f"sqlite:///{DEFAULT_SQLITE}"
    demo = Demo(database_url, options.port or free_port())
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


if __name__ == "__main__":
    sys.exit(main())
