"""Start the LangGraph trip for a user, pause its interrupts, print the pauses as JSON."""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from demo_agents.trip import trip_graph
from turnstate_app.contrib.langgraph import pause_interrupts


class Command(BaseCommand):
    help = "Run the trip graph until it stops at its approvals; one pause per interrupt, owned by --owner."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--owner", required=True, help="username of the person asked")

    def handle(self, *args: Any, owner: str, **options: Any) -> None:
        user = get_user_model().objects.get(username=owner)
        thread_id = f"trip-{uuid.uuid4().hex[:8]}"
        config = {"configurable": {"thread_id": thread_id}}
        graph = trip_graph()
        graph.invoke({"messages": [("user", "Book my trip to Lisbon.")], "log": []}, config)
        minted = pause_interrupts(graph, config, run_id=thread_id, session_id="demo", owner=user)
        self.stdout.write(
            json.dumps(
                {
                    "pid": os.getpid(),
                    "thread_id": thread_id,
                    "pauses": [
                        {"jti": m.claims.jti, "name": m.claims.name, "resumable": m.resumable} for m in minted
                    ],
                }
            )
        )
