"""Where the lifecycle stands, for cron, probes and monitoring scripts: figures, and exit 1 past a limit."""

from __future__ import annotations

import json
from typing import Any, cast

from django.core.management.base import CommandError, CommandParser
from django.db import DEFAULT_DB_ALIAS
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from turnstate_app.management.base import TurnstateCommand
from turnstate_app.management.options import MAX_COUNT, MAX_SECONDS, bounded_int, database_alias
from turnstate_app.status import COUNTS, DEFAULT_COUNT_LIMIT, LifecycleStatus, lifecycle_status

THRESHOLDS: dict[str, str] = {
    "max_pending": "pending",
    "max_pending_age": "oldest_pending_age_seconds",
    "max_awaiting_handoff": "awaiting_handoff",
    "max_stalled": "stalled",
    "max_unresumable": "unresumable",
    "max_failed_groups": "failed_groups",
    "max_failed_continuations": "failed_continuations",
}
"""Each ``--max-…`` option and the figure it bounds."""


class Command(TurnstateCommand):
    help = cast(
        str,
        _(
            "Print how many pauses wait, how old the oldest is, and how many answers are stuck; "
            "exit with status 1 when a figure passes a given --max-… threshold."
        ),
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--json",
            action="store_true",
            help=gettext(
                'Print one JSON document; "breached" lists the figures over their --max-... limit '
                '("passed", the same list under its earlier name, is kept for one minor version).'
            ),
        )
        self.add_checked(
            parser,
            "--database",
            default=DEFAULT_DB_ALIAS,
            type=database_alias,
            metavar="ALIAS",
            help=gettext("The database alias to read (default: default)."),
        )
        self.add_checked(
            parser,
            "--count-limit",
            type=bounded_int(1, MAX_COUNT),
            default=DEFAULT_COUNT_LIMIT,
            metavar="N",
            help=gettext(
                "Where each count stops (it then reads 'at least'; default {default}, max {maximum}); "
                "raised above any count threshold given."
            ).format(default=DEFAULT_COUNT_LIMIT, maximum=MAX_COUNT),
        )
        count = bounded_int(0, MAX_COUNT)
        described = {
            "max_pending": ("N", count, gettext("Exit with status 1 when more than N pauses are pending.")),
            "max_pending_age": (
                "S",
                bounded_int(0, MAX_SECONDS, "seconds"),
                gettext("Exit with status 1 when the oldest pending pause has waited more than S seconds."),
            ),
            "max_awaiting_handoff": (
                "N",
                count,
                gettext(
                    "Exit with status 1 when more than N answers wait for a hand-off to RESUME_HANDLER "
                    "that has not succeeded."
                ),
            ),
            "max_stalled": (
                "N",
                count,
                gettext(
                    "Exit with status 1 when more than N continuations are stalled: claimed longer than "
                    "STALLED_AFTER ago and unfinished."
                ),
            ),
            "max_unresumable": (
                "N",
                count,
                gettext(
                    "Exit with status 1 when more than N pending pauses cannot be continued by this store."
                ),
            ),
            "max_failed_groups": (
                "N",
                count,
                gettext("Exit with status 1 when more than N pause groups will not continue by themselves."),
            ),
            "max_failed_continuations": (
                "N",
                count,
                gettext("Exit with status 1 when more than N continuations failed, crashed or were refused."),
            ),
        }
        for dest, (metavar, validator, text) in described.items():
            self.add_checked(
                parser, "--" + dest.replace("_", "-"), dest=dest, type=validator, metavar=metavar, help=text
            )

    def handle(self, *args: Any, **options: Any) -> None:
        thresholds = {
            figure: options[dest] for dest, figure in THRESHOLDS.items() if options[dest] is not None
        }
        # A count threshold above where counts stop raises it (an age is no count).
        counted = [bound + 1 for figure, bound in thresholds.items() if figure in COUNTS]
        status = lifecycle_status(using=options["database"], limit=max([options["count_limit"], *counted]))
        figures = status.as_dict()
        breached = {
            figure: bound
            for figure, bound in thresholds.items()
            if figures[figure] is not None and figures[figure] > bound
        }
        if options["json"]:
            names = sorted(breached)
            document = {**figures, "breached": names, "passed": names}
            self.stdout.write(json.dumps(document, ensure_ascii=False, indent=2))
        else:
            self.stdout.write(table(status, thresholds, breached))
        if breached:
            raise CommandError(
                gettext("over limit: %(figures)s")
                % {
                    "figures": ", ".join(
                        f"{name} {figures[name]} > {bound}" for name, bound in breached.items()
                    )
                },
                returncode=1,
            )


def table(status: LifecycleStatus, thresholds: dict[str, int], breached: dict[str, int]) -> str:
    """One figure per line, its threshold beside it, and ``OVER LIMIT`` where it is above it."""
    figures = status.as_dict()
    lines = []
    for name in ("pending", "oldest_pending_age_seconds", *COUNTS[1:]):
        value = figures[name]
        shown = "-" if value is None else f"{value}+" if name in status.capped else str(value)
        line = f"{name.replace('_', ' '):<28} {shown:>10}"
        if name in thresholds:
            line += f"  (max {thresholds[name]}){'  OVER LIMIT' if name in breached else ''}"
        lines.append(line)
    return "\n".join(lines)
