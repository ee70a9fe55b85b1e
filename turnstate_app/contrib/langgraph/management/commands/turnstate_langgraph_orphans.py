"""Interrupts no pause asks for, and pending pauses whose interrupt is gone: for scripts and terminals."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandParser
from django.utils import timezone

from turnstate_app.contrib.langgraph.operators import STRANDED, UNPAUSED, as_rows, orphans
from turnstate_app.management.base import TurnstateCommand
from turnstate_app.management.commands.turnstate_unresumable import age

HEADER = ("AGE", "KIND", "THREAD", "CHECKPOINT", "INTERRUPT", "JTI")
SHORT = {"unpaused_interrupt": "no pause", "stranded_pause": "interrupt gone"}


class Command(TurnstateCommand):
    help = (
        "List LangGraph interrupts pending at a thread's head that no pause asks for, and pending "
        "pauses whose interrupt is no longer pending."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print one JSON document instead of a table.")

    def handle(self, *args: Any, **options: Any) -> None:
        now = timezone.now()
        rows = as_rows(orphans(now=now), now)
        if options["json"]:
            self.stdout.write(json.dumps({"count": len(rows), "results": rows}, ensure_ascii=False, indent=2))
        else:
            self.stdout.write(table(rows))


def table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no orphaned interrupts or pauses"
    lines = [HEADER] + [
        (
            age(row["age_seconds"]),
            SHORT[row["kind"]],
            row["thread_id"],
            row["checkpoint_id"],
            row["interrupt_id"],
            row["jti"] or "-",
        )
        for row in rows
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADER))]
    text = [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    ]
    legend = f"no pause: {UNPAUSED}\ninterrupt gone: {STRANDED}"
    return "\n".join([*text, "", f"{len(rows)} row(s)", legend])
