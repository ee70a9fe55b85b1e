"""Hand an answered pause to the worker again, as a redelivery would; wait and print its result."""

from __future__ import annotations

import json
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from turnstate_app.models import Pause
from turnstate_app.tasks import continue_pause


class Command(BaseCommand):
    help = "Enqueue continue_pause again for an answered pause; print what the worker returned."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("jti")
        parser.add_argument("--timeout", type=float, default=30)

    def handle(self, *args: Any, jti: str, timeout: float, **options: Any) -> None:
        if not Pause.objects.filter(jti=jti).exists():
            raise CommandError(f"no pause {jti!r}")
        result = continue_pause.enqueue(jti)
        deadline = time.monotonic() + timeout
        while not result.is_finished:
            if time.monotonic() > deadline:
                raise CommandError(f"the worker did not run the task within {timeout:.0f} s")
            time.sleep(0.2)
            result.refresh()
        self.stdout.write(json.dumps(result.return_value))
