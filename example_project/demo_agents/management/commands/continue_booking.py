"""Deliver a trip pause's answer to the continuation again, here and now (a redelivery)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Continue the PydanticAI trip a pause belongs to (runs nothing when it was continued)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("jti", help="the pause whose answer to deliver again")

    def handle(self, *args: Any, jti: str, **options: Any) -> None:
        from demo_agents.models import AgentRun, Booking
        from demo_agents.runs import shown
        from turnstate_app.models import Pause
        from turnstate_app.tasks import continue_pause

        run_id = Pause.objects.filter(jti=jti).values_list("run_id", flat=True).first()
        if run_id is None:
            raise CommandError(f"no pause {jti!r}")
        outcome = continue_pause.call(jti)  # the task itself, here and now
        outcome["bookings"] = Booking.objects.filter(run_id=run_id).count()
        outcome["status"] = shown(AgentRun.objects.get(run_id=run_id))["status"]
        self.stdout.write(json.dumps(outcome, default=str))
