"""`make demo`: an agent asks a person, the person answers over HTTP, another process continues.

Starts a real HTTP server and a task worker as separate processes, runs the scripted agent,
answers over the REST API, and checks every step it shows; ends with the link the person was
e-mailed to the question still waiting, to answer it in a browser. Exits non-zero, naming the step,
when anything goes wrong; stops everything it started, also on Ctrl-C.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from urllib.parse import urlsplit

from demo_support import RESUME, Demo, expect, main, say, short

HERE = Path(__file__).resolve().parent
DEFAULT_SQLITE = HERE / "demo.sqlite3"


class OffsiteDemo(Demo):
    def __init__(self, database_url: str, port: int) -> None:
        super().__init__(database_url, port)
        # The scripted agent is no framework's: its answers go to its own task (demo_agents/tasks.py).
        self.env["DEMO_RESUME_HANDLER"] = "demo_agents.tasks.enqueue_turn"

    def run(self) -> None:
        people = self.prepare()
        alice, admin = people["tokens"]["alice"], people["tokens"]["admin"]

        server, worker = self.start_server_and_worker()
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

        status, body = self.http("POST", RESUME, alice, {"token": first["token"], "answer": "May 11"})
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

        status, body = self.http("POST", RESUME, alice, {"token": first["token"], "answer": "May 4"})
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

        link = self.mailed_link("e-mail the answer link", "alice@example.com", second["token"])
        status, location = self.status_of(urlsplit(link).path)
        expect(
            "open the answer link",
            status == 302 and location.startswith("/accounts/login/"),
            status,
            location,
        )
        say("8. alice was e-mailed a link to each question (TURNSTATE['NOTIFY'] = email_owner); pause 2's")
        say(f"   opens its answer page after she signs in ({status} to {location.split('?')[0]}).")

        say()
        say(f"Done in {self.elapsed():.1f} s. To look around, start the server:")
        say(f"   DATABASE_URL={self.database_url} .venv/bin/python example_project/manage.py runserver")
        say(
            "   the admin: http://127.0.0.1:8000/admin/  user: admin  password: "
            f"{people['admin_password']}  (Swagger UI: /api/docs/)"
        )
        say(f"   pause 2's question: the link alice was e-mailed (password: {people['alice_password']})")
        say(f"   {link}")


if __name__ == "__main__":
    sys.exit(main(OffsiteDemo, DEFAULT_SQLITE, __doc__))
