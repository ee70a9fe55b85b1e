"""`make demo-langgraph`: a graph pauses in one process, alice answers over HTTP, a worker continues.

The graph (``agents/trip.py``) has no model and makes no network call: two approvals asked in
parallel, then a node that asks twice. Starts a real HTTP server and a task worker, runs the
graph in a third process that exits, answers over the REST API, and checks every step it
shows, including that a redelivered hand-off runs nothing. Exits non-zero naming the step
when anything goes wrong; stops everything it started.
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
DEFAULT_SQLITE = HERE / "demo-langgraph.sqlite3"
RESUME = "/api/turnstate/pauses/resume/"


class LangGraphDemo(Demo):
    def state(self, step: str) -> dict[str, Any]:
        status, body = self.http("GET", f"/agents/trips/{self.thread_id}/", self.alice)
        expect(step, status == 200, status, body)
        return dict(body)

    def pause(self, state: dict[str, Any], name: str, *, status: str = "pending") -> dict[str, Any]:
        found = [p for p in state["pauses"] if p["name"] == name and p["status"] == status]
        expect(f"find the {name} pause", len(found) == 1, state)
        return dict(found[-1])

    def answer(self, step: str, pause: dict[str, Any], answer: Any, *, expected: int = 200) -> Any:
        status, body = self.http("POST", RESUME, self.alice, {"token": pause["token"], "answer": answer})
        expect(step, status == expected, status, body)
        return body

    def wait_until(self, step: str, done: Any, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.require_alive("worker", step)
            state = self.state(step)
            if done(state):
                return state
            time.sleep(0.2)
        raise DemoFailedError(step, f"the worker did not get there within {timeout:.0f} s")

    def run(self) -> None:
        started = time.monotonic()
        say(f"turnstate LangGraph demo on {self.database_url.split('@')[-1]}  (logs: {self.logs})")
        say()
        if self.database_url.startswith(("postgres://", "postgresql://")):
            create_postgres_database(self.database_url)
        self.manage("prepare the database", "migrate", "--no-input")
        if not self.database_url.startswith("sqlite"):
            self.manage("empty the database", "flush", "--no-input")
        people = json.loads(self.manage("create the demo users", "demo_users"))
        self.alice = people["tokens"]["alice"]

        server = self.start("server", "runserver", f"127.0.0.1:{self.port}", "--noreload")
        worker = self.start("worker", "db_worker", "--interval", "0.2", "--no-startup-delay", "--no-reload")
        self.wait_for_server("start the HTTP server")
        self.require_alive("worker", "start the worker")
        say(f"1. Started an HTTP server (pid {server.pid}) and a task worker (pid {worker.pid}).")

        run = json.loads(self.manage("run the graph", "run_trip", "--owner", "alice"))
        self.thread_id = run["thread_id"]
        expect(
            "run the graph",
            sorted(p["name"] for p in run["pauses"]) == ["flights", "hotel"]
            and all(p["resumable"] for p in run["pauses"]),
            run,
        )
        state = self.state("read the trip")
        say(f"2. The graph ran in pid {run['pid']} (now exited) and stopped at two parallel interrupts;")
        say("   pause_interrupts minted one pause each, owned by alice, resumable=True:")
        for pause in state["pauses"]:
            question, interrupt_id = pause["question"]["question"], pause["interrupt_id"]
            say(f"   {pause['name']:8} {question}  (interrupt {interrupt_id[:12]}...)")

        hotel = self.pause(state, "hotel")
        body = self.answer("refuse an answer off the schema", hotel, {"approved": "yes please"}, expected=400)
        expect(
            "refuse an answer off the schema",
            self.pause(self.state("read the trip"), "hotel")["jti"] == hotel["jti"],
        )
        say("3. An answer off the hotel's schema is refused before the token is spent:")
        say(f"   400 {json.dumps(body)}")

        body = self.answer("answer the flights", self.pause(state, "flights"), {"approved": True})
        say(f"4. alice approved the flights over HTTP: 200 {json.dumps(body)}")
        state = self.wait_until(
            "continue the flights",
            lambda s: any(p["continued"] for p in s["pauses"] if p["name"] == "flights"),
        )
        expect("continue the flights", [r["node"] for r in state["node_runs"]] == ["flights"], state)
        expect("continue the flights", state["node_runs"][0]["pid"] == worker.pid, state)
        expect(
            "the hotel is not asked again", len(state["pauses"]) == 2 and len(state["waiting"]) == 1, state
        )
        say(f"5. The worker (pid {worker.pid}) continued the flights branch; the hotel's question is still")
        say("   open and was not asked again (2 pauses in all, 1 interrupt waiting).")

        self.answer("approve the hotel", self.pause(state, "hotel"), {"approved": True, "note": "sea view"})
        state = self.wait_until("ask the seat", lambda s: any(p["name"] == "details" for p in s["pauses"]))
        seat = self.pause(state, "details")
        expect(
            "ask the seat",
            seat["owner"] == "alice" and seat["question"]["question"] == "Window or aisle?",
            seat,
        )
        say("6. alice approved the hotel; the worker continued and the graph asked its next question,")
        question = seat["question"]["question"]
        say(f"   minted by the continuation and still owned by {seat['owner']}: {question!r}")

        self.answer("answer the seat", seat, "window")
        state = self.wait_until(
            "ask the meal",
            lambda s: any(
                p["name"] == "details" and p["status"] == "pending" and p["jti"] != seat["jti"]
                for p in s["pauses"]
            ),
        )
        meal = self.pause(state, "details")
        self.answer("answer the meal", meal, "vegetarian")
        state = self.wait_until("finish the trip", lambda s: "booked" in s["log"])
        say("7. The same node asked twice (seat, then meal); each answer continued once. The log:")
        for line in state["log"]:
            say(f"   {line}")
        nodes = sorted(r["node"] for r in state["node_runs"])
        expect("every node ran once", nodes == ["book", "details", "flights", "hotel"], state)
        expect("no fork", state["forks"] == 0, state)
        say(f"   node runs: {', '.join(nodes)} (once each); {state['checkpoints']} checkpoints, no fork.")

        runs, checkpoints = len(state["node_runs"]), state["checkpoints"]
        again = json.loads(self.manage("redeliver the hand-off", "redeliver_trip", meal["jti"]))
        after = self.state("read the trip")
        expect(
            "redeliver the hand-off",
            again["ran"] is False
            and again["reason"] == "already continued"
            and len(after["node_runs"]) == runs
            and after["checkpoints"] == checkpoints,
            again,
            after,
        )
        say(f"8. The last hand-off delivered again to the worker (pid {again['pid']}) ran nothing:")
        say(f"   ran={again['ran']} reason={again['reason']!r}; node runs and checkpoints unchanged.")

        listing = self.manage("list orphans", "turnstate_langgraph_orphans")
        expect("list orphans", "no orphaned interrupts or pauses" in listing, listing)
        say(f"9. manage.py turnstate_langgraph_orphans: {listing.strip()}")
        say()
        say(f"Done in {time.monotonic() - started:.1f} s.")


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
    demo = LangGraphDemo(database_url, options.port or free_port())
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
