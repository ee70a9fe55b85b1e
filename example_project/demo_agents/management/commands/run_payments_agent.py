"""Run the OpenAI Agents SDK payments agent until it pauses; print its pauses as JSON (for the demo)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Run the OpenAI Agents SDK payments agent: two approvals in one run, owned by --owner."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--owner", required=True, help="username of the person who approves")

    def handle(self, *args: Any, owner: str, **options: Any) -> None:
        from demo_agents.payments import start_payment

        run_id, session_id, pauses = start_payment(get_user_model().objects.get(username=owner))
        self.stdout.write(
            json.dumps(
                {
                    "run_id": run_id,
                    "session_id": session_id,
                    "pauses": [
                        {
                            "token": p.token,
                            "jti": p.claims.jti,
                            "tool": p.claims.name,
                            "resumable": p.resumable,
                        }
                        for p in pauses
                    ],
                }
            )
        )
