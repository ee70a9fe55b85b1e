"""`make demo-pydantic-ai`: a PydanticAI run asks a question and wants an approval; both are
answered over HTTP by different people; a worker process continues the run once.

The agent runs on PydanticAI's ``FunctionModel`` (no model, no network). Starts a real HTTP
server and a task worker as separate processes, checks every step it shows, exits non-zero
naming the step when anything goes wrong, and stops everything it started.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from demo_support import RESUME, Demo, expect, main, say, short

HERE = Path(__file__).resolve().parent
DEFAULT_SQLITE = HERE / "demo-pydantic-ai.sqlite3"


class PydanticAIDemo(Demo):
    title = "turnstate PydanticAI demo"

    def run(self) -> None:
        people = self.prepare()
        alice, admin = people["tokens"]["alice"], people["tokens"]["admin"]

        server, worker = self.start_server_and_worker()
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
            say(f"   + {short(message)}")

        again = json.loads(self.manage_pause("redeliver the answer", "continue_booking", approval["jti"]))
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
        say(f"Done in {self.elapsed():.1f} s. The conversation is in the admin under")
        say(f"   PydanticAI conversations (user: admin, password: {people['admin_password']}).")


if __name__ == "__main__":
    sys.exit(main(PydanticAIDemo, DEFAULT_SQLITE, __doc__))
