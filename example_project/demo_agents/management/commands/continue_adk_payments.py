"""Deliver an ADK payments pause's answer to the continuation again, here and now (a redelivery)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = (
        "Continue the Google ADK payments invocation a pause belongs to (runs nothing when it was continued)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("jti", help="the pause whose answer to deliver again")

    def handle(self, *args: Any, jti: str, **options: Any) -> None:
        from demo_agents.models import Payment
        from turnstate_app.models import Pause
        from turnstate_app.tasks import continue_pause

        session_id = Pause.objects.filter(jti=jti).values_list("session_id", flat=True).first()
        if session_id is None:
            raise CommandError(f"no pause {jti!r}")
        outcome = continue_pause.call(jti)  # the task itself, here and now
        outcome["transfers"] = Payment.objects.filter(run_id=session_id, tool="transfer").count()
        outcome["refunds"] = Payment.objects.filter(run_id=session_id, tool="refund").count()
        self.stdout.write(json.dumps(outcome, default=str))
