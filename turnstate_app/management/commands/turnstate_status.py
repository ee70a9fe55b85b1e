"""Where the lifecycle stands, for cron, probes and monitoring scripts: figures, and exit 1 past a limit."""

from __future__ import annotations

import json
from typing import Any, cast

from django.core.management.base import CommandError, CommandParser
from django.db import DEFAULT_DB_ALIAS
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from turnstate_app.management.base import TurnstateCommand
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
        parser.add_argument("--json", action="store_true", help=gettext("Print one JSON document."))
        parser.add_argument(
            "--database",
            default=DEFAULT_DB_ALIAS,
            help=gettext("The database alias to read (default: default)."),
        )
        parser.add_argument(
            "--count-limit",
            type=positive,
            default=DEFAULT_COUNT_LIMIT,
            help=gettext(
                "Where each count stops (it then reads 'at least'); raised above any threshold given."
            ),
        )
        described = {
            "max_pending": gettext("pending pauses"),
            "max_pending_age": gettext("seconds the oldest pending pause has waited"),
            "max_awaiting_handoff": gettext("answers whose hand-off to RESUME_HANDLER has not succeeded"),
            "max_stalled": gettext("continuations claimed longer than STALLED_AFTER ago, unfinished"),
            "max_unresumable": gettext("pending pauses whose run this store cannot continue"),
            "max_failed_groups": gettext("pause groups that will not continue by themselves"),
            "max_failed_continuations": gettext("continuations that failed, crashed or were refused"),
        }
        for dest, what in described.items():
            parser.add_argument(
                "--" + dest.replace("_", "-"),
                dest=dest,
                type=non_negative,
                metavar="N" if dest != "max_pending_age" else "S",
                help=gettext("Exit with status 1 when there are more %(what)s than this.") % {"what": what},
            )

    def handle(self, *args: Any, **options: Any) -> None:
        thresholds = {
            figure: options[dest] for dest, figure in THRESHOLDS.items() if options[dest] is not None
        }
        limit = max([options["count_limit"], *(value + 1 for value in thresholds.values())])
        status = lifecycle_status(using=options["database"], limit=limit)
        figures = status.as_dict()
        passed = {
            figure: bound
            for figure, bound in thresholds.items()
            if figures[figure] is not None and figures[figure] > bound
        }
        if options["json"]:
            self.stdout.write(json.dumps({**figures, "passed": sorted(passed)}, ensure_ascii=False, indent=2))
        else:
            self.stdout.write(table(status, thresholds, passed))
        if passed:
            raise CommandError(
                gettext("threshold passed: %(figures)s")
                % {
                    "figures": ", ".join(
                        f"{name} {figures[name]} > {bound}" for name, bound in passed.items()
                    )
                },
                returncode=1,
            )


def table(status: LifecycleStatus, thresholds: dict[str, int], passed: dict[str, int]) -> str:
    """One figure per line, its threshold beside it, and ``PASSED`` where it was passed."""
    figures = status.as_dict()
    lines = []
    for name in ("pending", "oldest_pending_age_seconds", *COUNTS[1:]):
        value = figures[name]
        shown = "-" if value is None else f"{value}+" if name in status.capped else str(value)
        line = f"{name.replace('_', ' '):<28} {shown:>10}"
        if name in thresholds:
            line += f"  (max {thresholds[name]}){'  PASSED' if name in passed else ''}"
        lines.append(line)
    return "\n".join(lines)


def positive(text: str) -> int:
    value = non_negative(text)
    if value == 0:
        raise ValueError(text)
    return value


def non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(text)
    return value
