"""Run the PydanticAI trip agent until it pauses; print its pauses as JSON (for the demo script)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Run the PydanticAI trip agent: a question and an approval in one run, owned by --owner."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--owner", required=True, help="username of the traveller")

    def handle(self, *args: Any, owner: str, **options: Any) -> None:
        from demo_agents.booking import start_trip

        run_id, pauses = start_trip(get_user_model().objects.get(username=owner))
        self.stdout.write(
            json.dumps(
                {
                    "run_id": run_id,
                    "conversation_id": pauses[0].claims.thread_id,
                    "pauses": [
                        {
                            "token": p.token,
                            "jti": p.claims.jti,
                            "tool": p.claims.name,
                            "tool_call_id": p.claims.tool_call_id,
                            "resumable": p.resumable,
                        }
                        for p in pauses
                    ],
                }
            )
        )
