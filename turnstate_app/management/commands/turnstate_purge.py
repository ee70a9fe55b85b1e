"""Retention for operators: old settled pauses and their rows, or one thread entirely."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, cast

from django.core.management.base import CommandParser
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from turnstate_app.management.base import TurnstateCommand
from turnstate_app.management.options import MAX_DAYS, bounded_int, identifier
from turnstate_app.models import Pause
from turnstate_app.retention import (
    DEFAULT_BATCH_SIZE,
    MAX_BATCH_SIZE,
    PurgeBatch,
    PurgeResult,
    erase_thread,
    purge_pauses,
)

days = bounded_int(1, MAX_DAYS, "days")
batch_size = bounded_int(1, MAX_BATCH_SIZE)


class Command(TurnstateCommand):
    help = cast(
        str,
        _(
            "Delete answered and expired pauses, with their request, turn-state and answer rows, whose "
            "last event is older than DAYS; or, with --thread, everything of one thread."
        ),
    )

    def add_arguments(self, parser: CommandParser) -> None:
        what = parser.add_mutually_exclusive_group(required=True)
        self.add_checked(
            what,
            "--older-than",
            type=days,
            metavar="DAYS",
            help=gettext(
                "Pauses whose last event (answered_at, else expires_at) is more than DAYS days old "
                "(1 to {maximum})."
            ).format(maximum=MAX_DAYS),
        )
        self.add_checked(
            what,
            "--thread",
            type=identifier,
            metavar="ID",
            help=gettext("Erase every pause and row of this thread, whatever its state."),
        )
        parser.add_argument(
            "--include-pending",
            action="store_true",
            help=gettext("Also pending pauses whose expiry is older than DAYS (never marked expired)."),
        )
        parser.add_argument(
            "--dry-run", action="store_true", help=gettext("Count what would be deleted; delete nothing.")
        )
        self.add_checked(
            parser,
            "--batch-size",
            type=batch_size,
            default=DEFAULT_BATCH_SIZE,
            metavar="N",
            help=gettext("Pauses (or rows) per transaction (default {default}, max {maximum}).").format(
                default=DEFAULT_BATCH_SIZE, maximum=MAX_BATCH_SIZE
            ),
        )

    def handle(
        self,
        *args: Any,
        older_than: int | None,
        thread: str | None,
        include_pending: bool,
        dry_run: bool,
        batch_size: int,
        verbosity: int,
        **options: Any,
    ) -> None:
        verb = "would delete" if dry_run else "deleted"

        def progress(batch: PurgeBatch) -> None:
            if verbosity >= 1:
                self.stdout.write(
                    f"batch {batch.number}: {verb} {batch.pauses} pause(s), {batch.rows} row(s)"
                )

        if thread is not None:
            result = erase_thread(thread, batch_size=batch_size, dry_run=dry_run, progress=progress)
        else:
            assert older_than is not None  # the argument group requires one of the two
            cutoff = timezone.now() - timedelta(days=older_than)
            if verbosity >= 2:
                self.stdout.write(f"purging pauses whose last event is before {cutoff.isoformat()}")
            result = purge_pauses(
                Pause.objects.purgeable(cutoff, include_pending=include_pending),
                batch_size=batch_size,
                dry_run=dry_run,
                progress=progress,
            )
        if verbosity >= 1:
            self.stdout.write(self.summary(result, verb))

    def summary(self, result: PurgeResult, verb: str) -> str:
        return f"{verb} {result.pauses} pause(s) and {result.rows} row(s) in {result.batches} batch(es)" + (
            " (dry run)" if result.dry_run else ""
        )
