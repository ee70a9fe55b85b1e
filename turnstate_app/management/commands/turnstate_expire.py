"""Expiry for operators and cron: pending pauses past their age are marked expired."""

from __future__ import annotations

from typing import Any, cast

from django.core.management.base import CommandParser
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from turnstate_app.expiry import ExpiryBatch, ExpiryResult, expire_overdue
from turnstate_app.management.base import TurnstateCommand
from turnstate_app.management.options import bounded_int
from turnstate_app.retention import DEFAULT_BATCH_SIZE, MAX_BATCH_SIZE

batch_size = bounded_int(1, MAX_BATCH_SIZE)


class Command(TurnstateCommand):
    help = cast(
        str,
        _(
            "Mark pending pauses whose expires_at has passed as expired, in batches; an answer that "
            "commits meanwhile wins."
        ),
    )

    def add_arguments(self, parser: CommandParser) -> None:
        self.add_checked(
            parser,
            "--batch-size",
            type=batch_size,
            default=DEFAULT_BATCH_SIZE,
            metavar="N",
            help=gettext("Pauses per UPDATE (default {default}, max {maximum}).").format(
                default=DEFAULT_BATCH_SIZE, maximum=MAX_BATCH_SIZE
            ),
        )
        parser.add_argument(
            "--dry-run", action="store_true", help=gettext("Count what would expire; change nothing.")
        )

    def handle(self, *args: Any, batch_size: int, dry_run: bool, verbosity: int, **options: Any) -> None:
        verb = "would expire" if dry_run else "expired"

        def progress(batch: ExpiryBatch) -> None:
            if verbosity >= 1:
                kept = f"; {batch.kept} changed meanwhile and kept its status" if batch.kept else ""
                self.stdout.write(f"batch {batch.number}: {verb} {batch.expired} pause(s){kept}")

        result = expire_overdue(batch_size=batch_size, dry_run=dry_run, progress=progress)
        if verbosity >= 1:
            self.stdout.write(summary(result, verb))


def summary(result: ExpiryResult, verb: str) -> str:
    kept = f"; {result.kept} changed meanwhile and kept its status" if result.kept else ""
    dry = " (dry run)" if result.dry_run else ""
    return f"{verb} {result.expired} pause(s) in {result.batches} batch(es){kept}{dry}"
