"""Hand answered pauses whose hand-off never succeeded to RESUME_HANDLER again."""

from __future__ import annotations

import argparse
from datetime import timedelta
from typing import Any, cast

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from turnstate_app.conf import conf
from turnstate_app.pauses import Redelivery, redeliver


def non_negative_seconds(text: str) -> int:
    """argparse's own error, so a shell sees a usage line (exit 2) and call_command a CommandError."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number of seconds, not {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, not {value}")
    return value


class Command(BaseCommand):
    help = cast(str, _("Call RESUME_HANDLER again for answered pauses it never accepted (at-least-once)."))

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than",
            type=non_negative_seconds,
            default=60,
            metavar="SECONDS",
            help=gettext(
                "Only pauses answered at least this long ago (default 60: leave in-flight hand-offs alone)."
            ),
        )

    def handle(self, *args: Any, older_than: int, **options: Any) -> None:
        if conf.RESUME_HANDLER is None:
            raise CommandError("TURNSTATE['RESUME_HANDLER'] is not set: there is nothing to hand to")
        result = redeliver(older_than=timedelta(seconds=older_than))
        for jti, reason in result.unreadable:
            self.stderr.write(f"pause {jti} not handed over, its records cannot be read: {reason}")
        self.stdout.write(summary(result))
        if result.not_handed_over:
            raise CommandError(
                f"{result.not_handed_over} pause(s) not handed over; they stay in awaiting_handoff(). "
                "See the lines above and the log."
            )


def summary(result: Redelivery) -> str:
    return (
        f"redelivered {result.delivered} pause(s); {result.failed} failed again; "
        f"{len(result.unreadable)} unreadable; {result.running} still running; "
        f"{result.gone} deleted meanwhile"
    )
