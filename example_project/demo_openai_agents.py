"""`make demo-openai-agents`: an OpenAI Agents SDK run wants two approvals; both are answered
over HTTP; the task worker continues the run once, with exactly the calls that were approved.

The agent runs on the SDK's ``ScriptedModel`` (no model, no network). Starts a real HTTP
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
DEFAULT_SQLITE = HERE / "demo-openai-agents.sqlite3"


class OpenAIAgentsDemo(Demo):
    title = "turnstate OpenAI Agents SDK demo"

    def run(self) -> None:
        people = self.prepare()
        alice = people["tokens"]["alice"]

        server, worker = self.start_server_and_worker()
        say(f"1. Started an HTTP server (pid {server.pid}) and a task worker (pid {worker.pid}).")

        run = json.loads(self.manage("run the agent", "run_payments_agent", "--owner", "alice"))
        pauses = {pause["tool"]: pause for pause in run["pauses"]}
        expect(
            "run the agent",
            set(pauses) == {"pay", "notify"} and all(p["resumable"] for p in pauses.values()),
            run,
        )
        say(f"2. The agent ran once (ScriptedModel) and stopped for two tool approvals of {run['run_id']}:")
        say('   pay     {"amount": 2400, "to": "acme"}               resumable=True')
        say('   notify  {"to": "finance", "text": "acme paid"}       resumable=True')
        say(f"   Its state is stored in the database, its conversation in session {run['session_id']};")
        say("   the two pauses are one group, owned by alice.")

        pay, notify = pauses["pay"], pauses["notify"]
        changed = {"approved": True, "override_args": {"amount": 9999, "to": "acme"}}
        status, body = self.http("POST", RESUME, alice, {"token": pay["token"], "answer": changed})
        expect("refuse changed arguments", status == 400 and "answer" in body, status, body)
        say(f"3. An approval that changes the arguments is refused before the token is spent: {status}.")

        status, body = self.http("POST", RESUME, alice, {"token": pay["token"], "answer": {"approved": True}})
        expect("approve the payment", status == 200 and body.get("status") == "answered", status, body)
        say(f"4. alice approved the payment over HTTP: {status} {json.dumps(body)}")
        time.sleep(1.0)  # the worker gets this answer too: the group is incomplete, so nothing runs
        paused = self.transcript(run["run_id"], alice, "wait for the group")
        expect("wait for the group", paused["status"] == "paused", paused)
        say("5. The run stays paused: a continuation needs the whole group, and notify is not answered.")

        rejection = {"approved": False, "message": "finance already knows"}
        status, body = self.http("POST", RESUME, alice, {"token": notify["token"], "answer": rejection})
        expect("reject the message", status == 200 and body.get("status") == "answered", status, body)
        say(f"6. alice rejected the message over HTTP: {status} {json.dumps(body)}")

        after = self.wait_for_continuation(run["run_id"], alice)
        expect("continue the run", after["continued_by_pid"] == worker.pid, after)
        say(f"7. The worker (pid {after['continued_by_pid']}) loaded the stored state and continued it once:")
        for message in after["transcript"][-3:]:
            say(f"   + {short(message)}")

        again = json.loads(self.manage_pause("redeliver the answer", "continue_payments", pay["jti"]))
        expect(
            "redeliver the answer",
            again["ran"] is False
            and again["reason"] == "already continued"
            and again["payments"] == 1
            and again["notifications"] == 0,
            again,
        )
        say(
            f"8. The approval delivered again: ran={again['ran']} ({again['reason']});"
            f" payments made: {again['payments']}, messages sent: {again['notifications']}."
        )

        say()
        say(f"Done in {self.elapsed():.1f} s. The run's state is in the admin under")
        say(f"   OpenAI Agents run states (user: admin, password: {people['admin_password']}).")


if __name__ == "__main__":
    sys.exit(main(OpenAIAgentsDemo, DEFAULT_SQLITE, __doc__))
