"""Print an ADK payments session as a chat UI shows it, from its stored events, as JSON (for the demo)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = (
        "Show a Google ADK payments session: its events as a transcript, and the tools that ran (with pids)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, help="the session's user id")
        parser.add_argument("session_id", help="the session to show")

    def handle(self, *args: Any, user: str, session_id: str, **options: Any) -> None:
        from demo_agents.adk_payments import session_events, transcript
        from demo_agents.models import Payment

        events = session_events(user, session_id)
        if not events:
            raise CommandError(f"no session {session_id!r} of {user!r}")
        ran = Payment.objects.filter(run_id=session_id).order_by("pk").values("tool", "detail", "pid")
        self.stdout.write(json.dumps({"transcript": transcript(events), "ran": list(ran)}, default=str))
