"""Run the Google ADK payments agent until it asks for confirmations; print its pauses as JSON."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Run the Google ADK payments agent: two confirmations in one invocation, owned by --owner."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--owner", required=True, help="username of the person who confirms")

    def handle(self, *args: Any, owner: str, **options: Any) -> None:
        from demo_agents.adk_payments import start_payment

        person = get_user_model().objects.get(username=owner)
        session_id, invocation_id, pauses = start_payment(person)
        self.stdout.write(
            json.dumps(
                {
                    "user_id": owner,
                    "session_id": session_id,
                    "invocation_id": invocation_id,
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
