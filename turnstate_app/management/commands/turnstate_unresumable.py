"""The unresumable pauses, for scripts and terminals: the admin page's rows, newest first.

``--jsonl`` streams one JSON document per row in constant memory; ``--limit`` and ``--after``
page by the key of the last row (printed as the next cursor), as the admin's list does.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, cast

from django.core.management.base import CommandError, CommandParser
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from turnstate_app.keyset import BadCursorError, cursor_of, keyset_after
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
        parser.add_argument(
            "--jsonl",
            action="store_true",
            help=gettext("Print one JSON document per row, streamed (constant memory, any size)."),
        )
        parser.add_argument(
            "--limit",
            type=int,
            help=gettext("At most this many rows; when more follow, the cursor of the next page is printed."),
        )
        parser.add_argument(
            "--after", help=gettext("Start after this cursor (printed by a --limit run before).")
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["limit"] is not None and options["limit"] < 1:
            raise CommandError(gettext("--limit must be at least 1"))
        rows = UnresumablePause.objects.order_by(*ORDER)
        if options["after"] is not None:
            try:
                rows = rows.filter(keyset_after(KEYS, options["after"]))
            except BadCursorError as error:
                raise CommandError(str(error)) from error
        values = rows.values(*FIELDS, "pk")
        now = timezone.now()
        next_cursor = None
        if options["limit"] is not None:
            page = list(values[: options["limit"] + 1])
            if len(page) > options["limit"]:
                page = page[: options["limit"]]
                next_cursor = cursor_of([page[-1]["created_at"], page[-1]["pk"]])
            found: Iterator[dict[str, Any]] = iter(page)
        else:
            found = values.iterator(chunk_size=STREAM_CHUNK)
        shaped = (shape(row, now) for row in found)
        if options["jsonl"]:
            for row in shaped:
                self.stdout.write(json.dumps(row, ensure_ascii=False))
        elif options["json"]:
            self.write_document(shaped, next_cursor)
        else:
            self.stdout.write(table(list(shaped)))
        if next_cursor is not None and not options["json"]:
            (self.stderr if options["jsonl"] else self.stdout).write(f"next page: --after {next_cursor}")

    def write_document(self, rows: Iterator[dict[str, Any]], next_cursor: str | None) -> None:
        """``{"results": [...], "count": N}`` (plus ``"next"`` when more follow), written row by row."""
        count = 0
        self.stdout.write('{"results": [', ending="")
        for row in rows:
            self.stdout.write(
                ("," if count else "") + "\n  " + json.dumps(row, ensure_ascii=False), ending=""
            )
            count += 1
        self.stdout.write(("\n" if count else "") + f'], "count": {count}', ending="")
        if next_cursor is not None:
            self.stdout.write(f', "next": {json.dumps(next_cursor)}', ending="")
        self.stdout.write("}")


ORDER = ("-created_at", "-pk")
KEYS = ("created_at", "pk")
STREAM_CHUNK = 1000


def shape(row: dict[str, Any], now: Any) -> dict[str, Any]:
    """One row as the command prints it."""
    return {
        "thread_id": row["thread_id"],
        "checkpoint_id": row["checkpoint_id"],
        "request_key": row["key"],
        "jti": row["jti"],
        "created_at": row["created_at"].isoformat(),
        "age_seconds": max(0, int((now - row["created_at"]).total_seconds())),
        "has_ledger": row["has_ledger"],
        "reason": row["reason"],
    }


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
