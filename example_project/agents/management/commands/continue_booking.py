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
        from agents.booking_tasks import continue_booking_now
        from agents.models import AgentRun, Booking
        from turnstate_app.models import Pause

        run_id = Pause.objects.filter(jti=jti).values_list("run_id", flat=True).first()
        if run_id is None:
            raise CommandError(f"no pause {jti!r}")
        outcome = continue_booking_now(jti)
        outcome["bookings"] = Booking.objects.filter(run_id=run_id).count()
        outcome["status"] = AgentRun.objects.get(run_id=run_id).status
        self.stdout.write(json.dumps(outcome, default=str))
