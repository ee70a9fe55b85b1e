"""`make demo-langgraph`: a graph pauses in one process, alice answers over HTTP, a worker continues.

The graph (``demo_agents/trip.py``) has no model and makes no network call: two approvals asked in
parallel, then a node that asks twice. Starts a real HTTP server and a task worker, runs the
graph in a third process that exits, answers over the REST API, and checks every step it
shows, including that a redelivered hand-off runs nothing. Exits non-zero naming the step
when anything goes wrong; stops everything it started.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from demo_support import RESUME, Demo, DemoFailedError, expect, main, say

HERE = Path(__file__).resolve().parent
DEFAULT_SQLITE = HERE / "demo-langgraph.sqlite3"


class LangGraphDemo(Demo):
    title = "turnstate LangGraph demo"

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
        people = self.prepare()
        self.alice = people["tokens"]["alice"]

        server, worker = self.start_server_and_worker()
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
        # The question reaches alice's inbox once the mint has committed (pause_minted, on commit):
        # wait for both, not only the ledger row.
        state = self.wait_until(
            "ask the seat", lambda s: any(p["name"] == "details" and p["question"] for p in s["pauses"])
        )
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
        again = json.loads(self.manage_pause("redeliver the hand-off", "redeliver_trip", meal["jti"]))
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
        say(f"8. The last hand-off delivered again to the worker (pid {worker.pid}) ran nothing:")
        say(f"   ran={again['ran']} reason={again['reason']!r}; node runs and checkpoints unchanged.")

        listing = self.manage("list orphans", "turnstate_langgraph_orphans")
        expect("list orphans", "no orphaned interrupts or pauses" in listing, listing)
        say(f"9. manage.py turnstate_langgraph_orphans: {listing.strip()}")
        say()
        say(f"Done in {self.elapsed():.1f} s.")


if __name__ == "__main__":
    sys.exit(main(LangGraphDemo, DEFAULT_SQLITE, __doc__))
