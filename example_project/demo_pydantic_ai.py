"""`make demo-pydantic-ai`: a PydanticAI run asks a question and wants an approval; both are
answered over HTTP by different people; a worker process continues the run once.

The agent runs on PydanticAI's ``FunctionModel`` (no model, no network). Starts a real HTTP
server and a task worker as separate processes, checks every step it shows, exits non-zero
naming the step when anything goes wrong, and stops everything it started.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from demo import Demo, DemoFailedError, create_postgres_database, expect, free_port, interrupt, say

HERE = Path(__file__).resolve().parent
DEFAULT_SQLITE = HERE / "demo-pydantic-ai.sqlite3"
RESUME = "/api/turnstate/pauses/resume/"


class PydanticAIDemo(Demo):
    def run(self) -> None:
        started = time.monotonic()
        say(f"turnstate PydanticAI demo on {self.database_url.split('@')[-1]}  (logs: {self.logs})")
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
        say(f"1. Started an HTTP server (pid {server.pid}) and a task worker (pid {worker.pid}).")

        trip = json.loads(self.manage("run the agent", "run_booking_agent", "--owner", "alice"))
        pauses = {pause["tool"]: pause for pause in trip["pauses"]}
        expect(
            "run the agent",
            set(pauses) == {"ask_traveller", "book_flight"} and all(p["resumable"] for p in pauses.values()),
            trip,
        )
        say(
            "2. The agent ran once (FunctionModel) and stopped for two deferred tool calls"
            f" of {trip['run_id']}:"
        )
        say("   ask_traveller  a question for alice      resumable=True")
        say("   book_flight    an approval, for staff    resumable=True")
        say(
            f"   Its conversation {trip['conversation_id']} is saved in the database;"
            " the two pauses are one group."
        )

        question, approval = pauses["ask_traveller"], pauses["book_flight"]
        status, body = self.http("POST", RESUME, alice, {"token": question["token"], "answer": "Monday"})
        expect("answer the question", status == 200 and body.get("status") == "answered", status, body)
        say(f"3. alice answered the question over HTTP: {status} {json.dumps(body)}")
        time.sleep(1.0)  # the worker gets this answer too: the group is incomplete, so nothing runs
        run = self.transcript(trip["run_id"], alice, "wait for the group")
        expect("wait for the group", run["status"] == "paused", run)
        say("4. The run stays paused: a continuation needs the whole group, and the approval is missing.")

        status, body = self.http(
            "POST", RESUME, admin, {"token": approval["token"], "answer": {"approved": "yes"}}
        )
        expect("refuse a malformed approval", status == 400 and "answer" in body, status, body)
        say(
            f"5. A malformed approval is refused before the token is spent: {status};"
            " the pause stays pending."
        )

        status, body = self.http(
            "POST", RESUME, admin, {"token": approval["token"], "answer": {"approved": True}}
        )
        expect("approve the booking", status == 200 and body.get("status") == "answered", status, body)
        say(f"6. A staff user approved the booking over HTTP: {status} {json.dumps(body)}")

        after = self.wait_for_continuation(trip["run_id"], alice)
        expect("continue the run", after["continued_by_pid"] == worker.pid, after)
        say(
            f"7. The worker (pid {after['continued_by_pid']}) loaded the latest conversation"
            " and continued it once:"
        )
        for message in after["transcript"][-3:]:
            say(f"   + {describe(message)}")

        again = json.loads(self.manage("redeliver the answer", "continue_booking", approval["jti"]))
        expect(
            "redeliver the answer",
            again["ran"] is False and again["reason"] == "already continued" and again["bookings"] == 1,
            again,
        )
        say(
            f"8. The approval delivered again: ran={again['ran']} ({again['reason']});"
            f" bookings made: {again['bookings']}."
        )

        say()
        say(f"Done in {time.monotonic() - started:.1f} s. The conversation is in the admin under")
        say(f"   PydanticAI conversations (user: admin, password: {people['admin_password']}).")


def describe(message: dict[str, Any]) -> str:
    if "tool_calls" in message:
        call = message["tool_calls"][0]
        return f"[{message['role']}] calls {call['name']}({json.dumps(call.get('arguments', {}))})"
    return f"[{message['role']}] {message.get('content')}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL") or "")
    parser.add_argument("--port", type=int, default=int(os.environ.get("DEMO_PORT") or 0))
    options = parser.parse_args()
    database_url = options.database_url
    if not database_url:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{DEFAULT_SQLITE}{suffix}").unlink(missing_ok=True)  # a fresh database every run
        database_url = f"sqlite:///{DEFAULT_SQLITE}"
    demo = PydanticAIDemo(database_url, options.port or free_port())
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
