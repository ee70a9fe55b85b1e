"""A trip as the demo shows it: log, questions waiting, pauses, node runs, forks. JSON."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from agents.models import NodeRun, Question
from agents.trip import trip_graph
from turnstate_app.contrib.langgraph.models import Checkpoint
from turnstate_app.models import Pause


class Command(BaseCommand):
    help = "Print a trip's state as JSON."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("thread_id")

    def handle(self, *args: Any, thread_id: str, **options: Any) -> None:
        state = trip_graph().get_state({"configurable": {"thread_id": thread_id}})
        parents = Counter(
            Checkpoint.objects.filter(thread_id=thread_id, checkpoint_ns="").values_list(
                "parent_checkpoint_id", flat=True
            )
        )
        pauses = (
            Pause.objects.filter(thread_id=thread_id).select_related("owner").order_by("created_at", "pk")
        )
        tokens = dict(Question.objects.filter(thread_id=thread_id).values_list("jti", "token"))
        self.stdout.write(
            json.dumps(
                {
                    "log": state.values.get("log", []),
                    "waiting": [i.id for i in state.interrupts],
                    "pauses": [
                        {
                            "jti": p.jti,
                            "name": p.name,
                            "interrupt_id": p.interrupt_id,
                            "status": p.status,
                            "owner": p.owner.username if p.owner else None,
                            "continued": p.continued_at is not None,
                            "failure": p.continuation_failure,
                            "token": tokens.get(p.jti),
                            "question": Question.objects.filter(jti=p.jti)
                            .values_list("request", flat=True)
                            .first(),
                        }
                        for p in pauses
                    ],
                    "node_runs": [
                        {"node": r.node, "pid": r.pid}
                        for r in NodeRun.objects.filter(thread_id=thread_id).order_by("pk")
                    ],
                    "checkpoints": sum(parents.values()),
                    "forks": sum(1 for count in parents.values() if count > 1),
                }
            )
        )
