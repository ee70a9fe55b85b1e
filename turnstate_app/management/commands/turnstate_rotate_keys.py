"""Key rotation for operators: every stored value re-encrypted under its thread's current key."""

from __future__ import annotations

from typing import Any, cast

from django.core.management.base import CommandError, CommandParser
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from turnstate_app.conf import conf
from turnstate_app.management.base import TurnstateCommand
from turnstate_app.management.options import bounded_int
from turnstate_app.rotation import DEFAULT_BATCH_SIZE, MAX_BATCH_SIZE, TableCounts, rotate, survey
from turnstate_app.sealed_tables import registered

batch_size = bounded_int(1, MAX_BATCH_SIZE)


class Command(TurnstateCommand):
    help = cast(
        str,
        _(
            "Re-encrypt every stored value not written with the first of TURNSTATE['ENCRYPTION_KEYS'] "
            "(or its thread's first key, with ENCRYPTION_KEY_RING), clear rows included, in bounded "
            "batches; safe while the app runs, and resumed by running it again. A row whose MAC does "
            "not verify (changed at rest) is never re-encrypted: it is counted and listed as unreadable. "
            "--dry-run counts the rows that are clear, on an old key, or unreadable (their key is gone, "
            "or they fail their MAC), and lists the latter; it reads every value to check its MAC, "
            "unless --skip-mac-check."
        ),
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help=gettext(
                "Count clear, old-key and unreadable rows per table (key gone, or failing its MAC); "
                "change nothing."
            ),
        )
        parser.add_argument(
            "--skip-mac-check",
            action="store_true",
            help=gettext(
                "With --dry-run: count by key id only, reading no value (quicker on a large store); "
                "rows that fail their MAC are then not found."
            ),
        )
        self.add_checked(
            parser,
            "--batch-size",
            type=batch_size,
            default=DEFAULT_BATCH_SIZE,
            metavar="N",
            help=gettext(
                "Rows per batch: one read and one UPDATE (default {default}, max {maximum})."
            ).format(default=DEFAULT_BATCH_SIZE, maximum=MAX_BATCH_SIZE),
        )

    def handle(
        self,
        *args: Any,
        dry_run: bool,
        batch_size: int,
        verbosity: int,
        skip_mac_check: bool = False,
        **options: Any,
    ) -> None:
        configured = bool(conf.ENCRYPTION_KEYS) or conf.ENCRYPTION_KEY_RING is not None
        if skip_mac_check and not dry_run:
            raise CommandError(
                "--skip-mac-check only applies to --dry-run: a rotation checks every MAC it relies on."
            )
        if dry_run:
            self.survey(batch_size, configured, macs=not skip_mac_check)
            return
        if not configured:
            raise CommandError(
                "No encryption keys are configured (TURNSTATE['ENCRYPTION_KEYS'] or ENCRYPTION_KEY_RING): "
                "there is no key to rotate to."
            )
        for table in registered():

            def progress(counts: TableCounts) -> None:
                if verbosity >= 1:
                    self.stdout.write(
                        f"{counts.label}: batch {counts.batches}: {counts.rotated} re-encrypted, "
                        f"{counts.written_meanwhile} written meanwhile, {counts.unreadable} unreadable "
                        f"({counts.failed_mac} fail their MAC)"
                    )

            counts = rotate(table, batch_size=batch_size, progress=progress)
            self.stdout.write(
                f"{counts.label}: {counts.rotated} row(s) re-encrypted in {counts.batches} batch(es); "
                f"{counts.written_meanwhile} written meanwhile (run again to include them); "
                f"{counts.unreadable} unreadable ({counts.failed_mac} fail their MAC: changed at rest, "
                "left as they are)"
            )
            self.list_unreadable(counts)

    def survey(self, batch_size: int, configured: bool, *, macs: bool) -> None:
        clear = 0
        for table in registered():
            counts = survey(table, batch_size=batch_size, macs=macs)
            clear += counts.clear
            if not table.identity:
                checked = ""
            elif macs:
                checked = f", {counts.failed_mac} fail their MAC (changed at rest)"
            else:
                checked = ", MACs not checked (--skip-mac-check)"
            self.stdout.write(
                f"{counts.label}: {counts.clear} clear, {counts.old_key} on an old key, "
                f"{counts.current} on the current key, "
                f"{counts.unreadable - counts.failed_mac} unreadable (key gone){checked}"
            )
            self.list_unreadable(counts)
        if configured and clear:
            self.stdout.write(
                f"Encryption is configured, but {clear} row(s) are still clear: run turnstate_rotate_keys."
            )

    def list_unreadable(self, counts: TableCounts) -> None:
        for pk, thread, why in counts.unreadable_rows:
            self.stdout.write(f"  unreadable: {counts.label} id={pk} thread={thread!r} ({why})")
        if counts.unreadable > len(counts.unreadable_rows):
            self.stdout.write(f"  ... and {counts.unreadable - len(counts.unreadable_rows)} more")
