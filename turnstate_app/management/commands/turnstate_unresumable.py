"""The unresumable pauses, for scripts and terminals: the admin page's rows, newest first."""

from __future__ import annotations

import json
from typing import Any, cast

from django.core.management.base import CommandParser
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from turnstate_app.management.base import TurnstateCommand
from turnstate_app.models import UNRESUMABLE_NO_LEDGER, UNRESUMABLE_NO_TURN_STATE, UnresumablePause

FIELDS = ("thread_id", "checkpoint_id", "key", "jti", "created_at", "has_ledger", "reason")
HEADER = ("AGE", "THREAD", "CHECKPOINT", "REQUEST KEY", "JTI", "WHY")
LEGEND = f"no ledger: {UNRESUMABLE_NO_LEDGER}\nno turn state: {UNRESUMABLE_NO_TURN_STATE}"


def age(seconds: int) -> str:
    """Compact and comparable by eye: 42s, 17m, 5h, 3d."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


class Command(TurnstateCommand):
    help = cast(
        str, _("List pending pauses whose request is recorded but whose run this store cannot continue.")
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--json", action="store_true", help=gettext("Print one JSON document instead of a table.")
        )

    def handle(self, *args: Any, **options: Any) -> None:
        now = timezone.now()
        rows = [
            {
                "thread_id": row["thread_id"],
                "checkpoint_id": row["checkpoint_id"],
                "request_key": row["key"],
                "jti": row["jti"],
                "created_at": row["created_at"].isoformat(),
                "age_seconds": max(0, int((now - row["created_at"]).total_seconds())),
                "has_ledger": row["has_ledger"],
                "reason": row["reason"],
            }
            for row in UnresumablePause.objects.order_by("-created_at", "-pk").values(*FIELDS)
        ]
        if options["json"]:
            self.stdout.write(json.dumps({"count": len(rows), "results": rows}, ensure_ascii=False, indent=2))
        else:
            self.stdout.write(table(rows))


def table(rows: list[dict[str, Any]]) -> str:
    """Aligned columns, the short form of each reason, and the long forms once below."""
    if not rows:
        return "no unresumable pauses"
    lines = [HEADER] + [
        (
            age(row["age_seconds"]),
            row["thread_id"],
            row["checkpoint_id"],
            row["request_key"],
            row["jti"] or "-",
            short_reason(row),
        )
        for row in rows
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADER))]
    text = [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    ]
    stored = sorted({f"{short_reason(row)}: {row['reason']}" for row in rows if stored_reason(row)})
    return "\n".join([*text, "", f"{len(rows)} unresumable pause(s)", LEGEND, *stored])


def short_reason(row: dict[str, Any]) -> str:
    """``no ledger``, ``no turn state``, or the headline of the reason the ledger row stores."""
    if not row["has_ledger"]:
        return "no ledger"
    if not stored_reason(row):
        return "no turn state"
    return str(row["reason"]).split(" (", 1)[0].split(":", 1)[0]


def stored_reason(row: dict[str, Any]) -> bool:
    """Whether the reason is one the pause's ledger row stores (not one of the two in the legend)."""
    return row["reason"] not in (UNRESUMABLE_NO_LEDGER, UNRESUMABLE_NO_TURN_STATE)
