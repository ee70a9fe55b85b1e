"""Run both scripted turns for a user and print their tokens as JSON (for the demo script)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from demo_agents.scripted import ask_user_turn, interrupt_turn


class Command(BaseCommand):
    help = "Run the scripted agent: one ask_user pause and one interrupt pause, owned by --owner."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--owner", required=True, help="username of the person asked")

    def handle(self, *args: Any, owner: str, **options: Any) -> None:
        user = get_user_model().objects.get(username=owner)
        pauses = [ask_user_turn(user), interrupt_turn(user)]
        self.stdout.write(
            json.dumps(
                [
                    {
                        "token": p.token,
                        "jti": p.claims.jti,
                        "run_id": p.claims.run_id,
                        "thread_id": p.claims.thread_id,
                        "resumable": p.resumable,
                    }
                    for p in pauses
                ]
            )
        )
