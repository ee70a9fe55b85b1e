"""The unresumable pauses, for scripts and terminals: the admin page's rows, newest first.

``--jsonl`` streams one JSON document per row in constant memory; ``--limit`` and ``--after``
page by the key of the last row (printed as the next cursor), as the admin's list does. Either
way the rows read are the request rows of the last ``TOKEN_MAX_AGE`` (and those of stranded
pauses), never the store's history: ``CheckpointMetadataQuerySet.unresumable`` says why.
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
from turnstate_app.management.options import bounded_int, cursor
from turnstate_app.models import UNRESUMABLE_NO_LEDGER, UNRESUMABLE_NO_TURN_STATE, UnresumablePause
from turnstate_app.status import DEFAULT_COUNT_LIMIT

FIELDS = ("thread_id", "checkpoint_id", "key", "jti", "created_at", "has_ledger", "reason")
HEADER = ("AGE", "THREAD", "CHECKPOINT", "REQUEST KEY", "JTI", "WHY")


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
        self.add_checked(
            parser,
            "--limit",
            type=bounded_int(1, MAX_PAGE),
            metavar="N",
            help=gettext(
                "At most N rows (1 to {maximum}); when more follow, the cursor of the next page is printed."
            ).format(maximum=MAX_PAGE),
        )
        self.add_checked(
            parser,
            "--after",
            type=cursor,
            metavar="CURSOR",
            help=gettext("Start after this cursor (printed by a --limit run before)."),
        )

    def handle(self, *args: Any, **options: Any) -> None:
        rows = UnresumablePause.objects.order_by(*ORDER)
        if options["after"] is not None:
            try:
                rows = rows.filter(keyset_after(KEYS, options["after"]))
            except BadCursorError as error:
                raise CommandError(f"--after: {error}") from error
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
            listed = list(shaped)
            partial = next_cursor is not None or (options["after"] is not None and bool(listed))
            self.stdout.write(table(listed, total=total_of() if partial else None))
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
MAX_PAGE = 100_000
"""The most rows one ``--limit`` page holds in memory (``--jsonl`` alone streams any number)."""
COUNT_CAP = DEFAULT_COUNT_LIMIT
"""Where the count of a paged listing stops, as ``turnstate_status``'s counts do."""


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


def total_of() -> str:
    """How many unresumable pauses exist, counted no further than ``COUNT_CAP`` (the list's two
    queries: where its rows start, then the count). Their keys only: a row's owner and reason
    are not read to count it."""
    total = UnresumablePause.objects.values("pk")[:COUNT_CAP].count()
    return f"at least {total}" if total >= COUNT_CAP else str(total)


def table(rows: list[dict[str, Any]], *, total: str | None = None) -> str:
    """Aligned columns, the short form of each reason, and the long form of each shown once below.

    ``total`` is how many exist when the rows are one page of them."""
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
    legend = sorted({f"{short_reason(row)}: {row['reason']}" for row in rows})
    shown = (
        f"{len(rows)} unresumable pause(s)"
        if total is None
        else f"{len(rows)} of {total} unresumable pause(s) shown"
    )
    return "\n".join([*text, "", shown, *legend])


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
