"""`make demo-google-adk`: a Google ADK invocation asks for two confirmations, one of them with
structured data; both are answered over HTTP; the task worker sends them back into the same
invocation once, and the confirmed tools run once.

The agent runs on a scripted model (no model, no network, no Google account). Starts a real
HTTP server and a task worker as separate processes, checks every step it shows, exits non-zero
naming the step when anything goes wrong, and stops everything it started.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from demo_support import RESUME, Demo, DemoFailedError, expect, main, say, short

HERE = Path(__file__).resolve().parent
DEFAULT_SQLITE = HERE / "demo-google-adk.sqlite3"
PAUSES = "/api/turnstate/pauses/"


class GoogleADKDemo(Demo):
    title = "turnstate Google ADK demo"

    def run(self) -> None:
        people = self.prepare()
        alice = people["tokens"]["alice"]

        server, worker = self.start_server_and_worker()
        say(f"1. Started an HTTP server (pid {server.pid}) and a task worker (pid {worker.pid}).")

        run = json.loads(self.manage("run the agent", "run_adk_payments", "--owner", "alice"))
        pauses = {pause["tool"]: pause for pause in run["pauses"]}
        expect(
            "run the agent",
            set(pauses) == {"transfer", "refund"} and all(p["resumable"] for p in pauses.values()),
            run,
        )
        transfer, refund = pauses["transfer"], pauses["refund"]
        asked = {tool: self.pause(pause["jti"], alice, "show the pauses") for tool, pause in pauses.items()}
        expect(
            "show the pauses",
            asked["transfer"]["request"]["arguments"] == {"amount": 2400, "to": "acme"}
            and self.answer_fields(asked["transfer"]) == {"confirmed": "boolean"}
            and asked["refund"]["request"]["arguments"] == {"order": "A-17"}
            and self.payload_fields(asked["refund"]) == {"amount": "integer", "account": "string"}
            and asked["refund"]["group"] == asked["transfer"]["group"],
            asked,
        )
        say(
            "2. The agent ran once (a scripted BaseLlm) and stopped for two adk_request_confirmation"
            f" calls of invocation {run['invocation_id']}."
        )
        gated, form = asked["transfer"]["request"], asked["refund"]["request"]
        payload = json.dumps(self.payload_fields(asked["refund"]))
        say("   Each is a pause (resumable=True, one group, owned by alice); GET pauses/<jti>/ shows her:")
        say(f"   transfer  {json.dumps(gated['arguments'])}  (require_confirmation=True)")
        say('             answer {"confirmed": true} or {"confirmed": false}')
        say(f"   refund    {json.dumps(form['arguments'])}  {form['hint']}")
        say(f'             answer {{"confirmed": true, "payload": {payload}}} or {{"confirmed": false}}')
        say("             (the payload's schema is the shape of the one the tool sent)")
        say(f"   Session {run['session_id']} and its events are in the database (DjangoSessionService).")

        wrong = {"confirmed": True, "payload": {"amount": "all of it", "account": "DE02 1234"}}
        status, body = self.http("POST", RESUME, alice, {"token": refund["token"], "answer": wrong})
        why = re.search(
            r"\$\.payload\.amount: [^)]*", " ".join(body.get("answer") or []) if status == 400 else ""
        )
        expect("refuse a bad payload", why is not None, status, body)
        say(
            f"3. A payload off that schema is refused before the token is spent: {status} ({why and why[0]})."
        )

        status, body = self.http(
            "POST", RESUME, alice, {"token": transfer["token"], "answer": {"confirmed": True}}
        )
        expect("confirm the transfer", status == 200 and body.get("status") == "answered", status, body)
        say(f"4. alice confirmed the transfer over HTTP: {status} {json.dumps(body)}")
        time.sleep(1.0)  # the worker gets this answer too: the group is incomplete, so nothing runs
        waiting = self.pause(transfer["jti"], alice, "wait for the group")
        expect("wait for the group", waiting["group_state"] == "pending", waiting)
        say("5. The invocation stays paused: its continuation needs the whole group; refund is unanswered.")

        form = {"confirmed": True, "payload": {"amount": 40, "account": "DE02 1234"}}
        status, body = self.http("POST", RESUME, alice, {"token": refund["token"], "answer": form})
        expect("answer the refund", status == 200 and body.get("status") == "answered", status, body)
        say(f"6. alice filled in the refund over HTTP: {status} {json.dumps(body)}")

        self.wait_for_group(refund["jti"], alice)
        after = json.loads(self.manage("continue the invocation", "show_adk_payments", *self.session(run)))
        ran = [(tool["tool"], tool["pid"]) for tool in after["ran"]]
        expect("continue the invocation", ran == [("transfer", worker.pid), ("refund", worker.pid)], after)
        say(f"7. The worker (pid {worker.pid}) sent both confirmations back into invocation")
        say(f"   {run['invocation_id']} once; each tool ran once, in the worker:")
        for tool in after["ran"]:
            say(f"   {tool['tool']:<9} {tool['detail']}")
        say(f"   + {short(after['transcript'][-1])}")

        again = json.loads(
            self.manage_pause("redeliver the answer", "continue_adk_payments", transfer["jti"])
        )
        expect(
            "redeliver the answer",
            again["ran"] is False
            and again["reason"] == "already continued"
            and again["transfers"] == 1
            and again["refunds"] == 1,
            again,
        )
        say(
            f"8. The confirmation delivered again: ran={again['ran']} ({again['reason']});"
            f" transfers made: {again['transfers']}, refunds made: {again['refunds']}."
        )

        say()
        say(f"Done in {self.elapsed():.1f} s. The session and its events are in the admin under")
        say(f"   Google ADK sessions and events (user: admin, password: {people['admin_password']}).")

    def pause(self, jti: str, token: str, step: str) -> dict[str, Any]:
        """A pause as the REST API shows it to ``token``'s person."""
        status, body = self.http("GET", f"{PAUSES}{jti}/", token)
        expect(step, status == 200, status, body)
        return dict(body)

    @staticmethod
    def answer_fields(pause: dict[str, Any]) -> dict[str, Any]:
        """An answer schema's fields and their JSON types, when it is one object."""
        properties = (pause.get("answer_schema") or {}).get("properties") or {}
        return {name: field.get("type") for name, field in properties.items()}

    @staticmethod
    def payload_fields(pause: dict[str, Any]) -> dict[str, Any]:
        """The payload's fields and their JSON types, from the pause's answer schema (a confirmation
        with its payload, or a rejection)."""
        schema = pause.get("answer_schema") or {}
        for shape in schema.get("oneOf") or [schema]:
            payload = (shape.get("properties") or {}).get("payload")
            if payload:
                return {name: field.get("type") for name, field in (payload.get("properties") or {}).items()}
        return {}

    @staticmethod
    def session(run: dict[str, Any]) -> list[str]:
        return ["--user", run["user_id"], "--", run["session_id"]]

    def wait_for_group(self, jti: str, token: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.require_alive("worker", "continue the invocation")
            if self.pause(jti, token, "continue the invocation")["group_state"] == "continued":
                return
            time.sleep(0.2)
        raise DemoFailedError(
            "continue the invocation", f"the worker did not continue the invocation within {timeout:.0f} s"
        )


if __name__ == "__main__":
    sys.exit(main(GoogleADKDemo, DEFAULT_SQLITE, __doc__))
