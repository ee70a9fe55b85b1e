"""Every operator view of the app, as the callables ``bench/ops.py --views`` times.

Enumerated from the code: the REST routes (``turnstate_app/urls.py``, ``turnstate_app/api/``:
each list's first page, its page 100 and its last page, each filter of ``PauseFilter`` and
``CheckpointFilter``, each detail), the admin's three lists (``turnstate_app/admin.py``: first,
100th and last page, every value of every list filter, each search, each change page) and the
management commands' read-only forms (``--dry-run``, listings). Each callable returns the rows
the view returned or counted, so the report can set them beside its time.

Later pages are reached as an operator reaches them, untimed: a REST page by following
``next`` and an admin page by following "Next page", 99 times. The last page is reached by the
cursor a client would hold there, built from the row that precedes it (nobody pages 100,000
times to reach it). Where a list has fewer than 100 pages, the deepest page it has is timed
and its depth reported.

Commands that read the whole store by design (``turnstate_rotate_keys --dry-run``, the
unresumable listing without ``--limit``) are "whole-store" views: timed in fewer rounds, their
rows returned growing with the store.
"""

from __future__ import annotations

import html
import io
import json
import re
from base64 import b64encode
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

API = "/api/turnstate/"
ADMIN = "/admin/turnstate_app/"
DEPTH = 100
"""The deep page: the 100th, reached by following the list's own next links."""


@dataclass
class View:
    """One operator view: what it runs (returning the rows it returned or counted)."""

    run: Callable[[], int | None]
    kind: str  # "rest", "admin", "command"
    depth: int | None = None  # for a deep page: the page reached
    whole_store: bool = False
    notes: dict[str, Any] = field(default_factory=dict)


def ok(response: Any, url: str) -> Any:
    if response.status_code != 200:
        raise RuntimeError(f"GET {url}: {response.status_code}")
    return response


def rest_list(client: Any, url: str) -> Callable[[], int]:
    def run() -> int:
        return len(ok(client.get(url), url).json()["results"])

    return run


def rest_one(client: Any, url: str) -> Callable[[], int]:
    def run() -> int:
        ok(client.get(url), url)
        return 1

    return run


ADMIN_ROW = re.compile(r'<th class="field-')
NEXT_LINK = re.compile(r'href="(\?[^"]*)" class="turnstate-next"')


def admin_list(client: Any, url: str) -> Callable[[], int]:
    """A changelist page; its rows counted in the HTML (each row's first cell is a ``<th>``)."""

    def run() -> int:
        return len(ADMIN_ROW.findall(ok(client.get(url), url).content.decode()))

    return run


def admin_page(client: Any, url: str) -> Callable[[], int]:
    def run() -> int:
        ok(client.get(url), url)
        return 1

    return run


def command(*args: str) -> Callable[[], int]:
    """A management command, output captured; its rows are its output lines (JSON: its ``results``)."""
    from django.core.management import call_command

    def run() -> int:
        out, err = io.StringIO(), io.StringIO()
        call_command(*args, stdout=out, stderr=err)
        text = out.getvalue()
        if "--json" in args:
            document = json.loads(text)
            if isinstance(document, dict) and "results" in document:
                return len(document["results"])
        return len([line for line in text.splitlines() if line.strip()])

    return run


def rest_deep(client: Any, url: str, depth: int) -> tuple[str, int]:
    """The URL of page ``depth`` of a REST list (or of its deepest page), by following ``next``."""
    page, current = 1, url
    while page < depth:
        following = ok(client.get(current), current).json()["next"]
        if not following:
            break
        page, current = page + 1, following
    return current, page


def admin_deep(client: Any, url: str, depth: int) -> tuple[str, int]:
    """The URL of page ``depth`` of an admin list (or of its deepest page), by following "Next page"."""
    page, current = 1, url
    while page < depth:
        link = NEXT_LINK.search(ok(client.get(current), current).content.decode())
        if link is None:
            break
        page, current = page + 1, url.split("?", 1)[0] + html.unescape(link.group(1))
    return current, page


def rest_cursor(position: Any) -> str:
    """DRF's cursor at ``position`` (a ``created_at``), as its ``encode_cursor`` writes one."""
    from datetime import UTC

    query = urlencode({"p": str(position.astimezone(UTC))})
    return b64encode(query.encode("ascii")).decode("ascii")


def rest_last(rows: Any, page_size: int = 50) -> str | None:
    """The cursor of the last page of a list in ``(created_at, id)`` order: after the row
    ``page_size`` from its end (None: one page holds the whole list)."""
    before = rows.order_by("-created_at", "-pk").values_list("created_at", flat=True)[
        page_size : page_size + 1
    ]
    found = list(before)
    return rest_cursor(found[0]) if found else None


def admin_last(rows: Any, keys: tuple[str, ...], per_page: int) -> str | None:
    """The ``?after=`` of the last page of an admin keyset list (newest first by ``keys``)."""
    from turnstate_app.keyset import cursor_of

    found = list(rows.order_by(*keys).values_list(*keys)[per_page : per_page + 1])
    return cursor_of(list(found[0])) if found else None


def build(staff: Any, wanted: Callable[[str], bool] = lambda name: True) -> dict[str, View]:
    """Every view ``wanted`` names, ready to run against the seeded database (lookups of sample
    ids and the following of next links untimed, and done only for the views wanted)."""
    from django.test import Client
    from rest_framework.test import APIClient

    from turnstate_app.admin import (
        AgeFilter,
        CheckpointMetadataAdmin,
        ContinuationFilter,
        PauseAdmin,
        UnresumablePauseAdmin,
    )
    from turnstate_app.choices import PauseStatus, RowKind
    from turnstate_app.keyset import cursor_of
    from turnstate_app.managers import GROUP_STATES
    from turnstate_app.models import CheckpointMetadata, Pause, UnresumablePause

    api = APIClient()
    api.force_authenticate(user=staff)
    admin = Client()
    admin.force_login(staff)
    views: dict[str, View] = {}

    grouped = Pause.objects.exclude(group=None).order_by("pk").first()
    sample = grouped or Pause.objects.order_by("pk").first()
    assert sample is not None
    row = CheckpointMetadata.objects.order_by("pk").first()
    assert row is not None
    stranded = UnresumablePause.objects.order_by("-created_at", "-pk").first()

    # --- REST --------------------------------------------------------------------------------
    lists = {
        "pauses/": (API + "pauses/", Pause.objects.all()),
        "checkpoints/": (API + "checkpoints/", CheckpointMetadata.objects.all()),
        "pauses/unresumable/": (API + "pauses/unresumable/", UnresumablePause.objects.all()),
    }
    for name, (url, rows) in lists.items():
        views[f"GET {name}"] = View(rest_list(api, url), "rest")
        if wanted(f"GET {name} page {DEPTH}"):
            deep, depth = rest_deep(api, url, DEPTH)
            views[f"GET {name} page {DEPTH}"] = View(rest_list(api, deep), "rest", depth=depth)
        if wanted(f"GET {name} last page"):
            last = rest_last(rows)
            views[f"GET {name} last page"] = View(
                rest_list(api, url if last is None else url + "?" + urlencode({"cursor": last})), "rest"
            )
    pause_filters = {
        **{f"status={s}": {"status": s} for s in PauseStatus.values},
        "resumable=true": {"resumable": "true"},
        "resumable=false": {"resumable": "false"},
        "thread_id": {"thread_id": sample.thread_id},
        "session_id": {"session_id": sample.session_id},
        "run_id": {"run_id": sample.run_id},
        "group": {"group": sample.group or "none"},
    }
    for label, query in pause_filters.items():
        views[f"GET pauses/?{label}"] = View(rest_list(api, API + "pauses/?" + urlencode(query)), "rest")
    store_filters = {
        "thread_id": {"thread_id": row.thread_id},
        "checkpoint_id": {"checkpoint_id": row.checkpoint_id},
        "key_prefix=turn_state:": {"key_prefix": "turn_state:"},
        "thread_id+key_prefix": {"thread_id": sample.thread_id, "key_prefix": "ask_user_request:"},
    }
    for label, query in store_filters.items():
        views[f"GET checkpoints/?{label}"] = View(
            rest_list(api, API + "checkpoints/?" + urlencode(query)), "rest"
        )
    views["GET pauses/<jti>/"] = View(rest_one(api, f"{API}pauses/{sample.jti}/"), "rest")
    views["GET checkpoints/<id>/"] = View(rest_one(api, f"{API}checkpoints/{row.pk}/"), "rest")
    views["GET status/"] = View(rest_one(api, API + "status/"), "rest")

    # --- admin -------------------------------------------------------------------------------
    changelists = {  # each list's own order: a cursor is a key of it
        "pause": (Pause.objects.all(), PauseAdmin),
        "checkpointmetadata": (CheckpointMetadata.objects.all(), CheckpointMetadataAdmin),
        "unresumablepause": (UnresumablePause.objects.all(), UnresumablePauseAdmin),
    }
    for name, (rows, list_admin) in changelists.items():
        keys = tuple(str(field).lstrip("-") for field in list_admin.ordering or ("-pk",))
        per_page = list_admin.list_per_page
        url = f"{ADMIN}{name}/"
        views[f"admin {name}"] = View(admin_list(admin, url), "admin")
        if wanted(f"admin {name} page {DEPTH}"):
            deep, depth = admin_deep(admin, url, DEPTH)
            views[f"admin {name} page {DEPTH}"] = View(admin_list(admin, deep), "admin", depth=depth)
        if wanted(f"admin {name} last page"):
            last = admin_last(rows, keys, per_page)
            views[f"admin {name} last page"] = View(
                admin_list(admin, url if last is None else url + "?" + urlencode({"after": last})), "admin"
            )
        for age in AgeFilter.SPANS:
            views[f"admin {name} ?age={age}"] = View(admin_list(admin, f"{url}?age={age}"), "admin")
    pause_filter_values = {
        **{"status__exact": list(PauseStatus.values)},
        "resumable_now": ["1", "0"],
        "resumable__exact": ["1", "0"],
        "continuation": [value for value, _label in ContinuationFilter.lookups(None, None, None)],  # type: ignore[arg-type]
        "group_state": list(GROUP_STATES),
    }
    for parameter, values in pause_filter_values.items():
        for value in values:
            views[f"admin pause ?{parameter}={value}"] = View(
                admin_list(admin, f"{ADMIN}pause/?{parameter}={value}"), "admin"
            )
    for kind in RowKind.values:
        views[f"admin checkpointmetadata ?kind={kind}"] = View(
            admin_list(admin, f"{ADMIN}checkpointmetadata/?kind={kind}"), "admin"
        )
    for reason in ("no_ledger", "no_turn_state", "stored"):
        views[f"admin unresumablepause ?reason={reason}"] = View(
            admin_list(admin, f"{ADMIN}unresumablepause/?reason={reason}"), "admin"
        )
    searches = {
        "pause": {"jti": sample.jti, "thread": sample.thread_id, "run": sample.run_id},
        "checkpointmetadata": {
            "thread": row.thread_id,
            "checkpoint": row.checkpoint_id,
            "key (contains)": f"turn_state:{sample.jti}",
        },
        "unresumablepause": {
            "thread": stranded.thread_id if stranded else sample.thread_id,
            "jti": (stranded.jti if stranded and stranded.jti else sample.jti),
        },
    }
    for name, terms in searches.items():
        for label, term in terms.items():
            views[f"admin {name} search {label}"] = View(
                admin_list(admin, f"{ADMIN}{name}/?" + urlencode({"q": term})), "admin"
            )
    views["admin pause change"] = View(admin_page(admin, f"{ADMIN}pause/{sample.pk}/change/"), "admin")
    views["admin checkpointmetadata change"] = View(
        admin_page(admin, f"{ADMIN}checkpointmetadata/{row.pk}/change/"), "admin"
    )
    views["admin checkpointmetadata value"] = View(
        admin_page(admin, f"{ADMIN}checkpointmetadata/{row.pk}/value/"), "admin"
    )
    if stranded is not None:
        views["admin unresumablepause change"] = View(
            admin_page(admin, f"{ADMIN}unresumablepause/{stranded.pk}/change/"), "admin"
        )

    # --- commands ----------------------------------------------------------------------------
    views["turnstate_status"] = View(command("turnstate_status"), "command")
    views["turnstate_status --json"] = View(command("turnstate_status", "--json"), "command")
    views["turnstate_unresumable --limit 50"] = View(
        command("turnstate_unresumable", "--limit", "50"), "command"
    )
    after = admin_last(UnresumablePause.objects.all(), ("created_at", "pk"), 50)
    newest = UnresumablePause.objects.order_by("-created_at", "-pk").values_list("created_at", "pk")
    page_one = list(newest[49:50])
    if page_one:
        second = cursor_of(list(page_one[0]))
        views["turnstate_unresumable --limit 50 --after (page 2)"] = View(
            command("turnstate_unresumable", "--limit", "50", "--after", second), "command"
        )
    if after is not None:
        views["turnstate_unresumable --limit 50 --after (last page)"] = View(
            command("turnstate_unresumable", "--limit", "50", "--after", after), "command"
        )
    views["turnstate_unresumable --json --limit 50"] = View(
        command("turnstate_unresumable", "--json", "--limit", "50"), "command"
    )
    for form in ((), ("--json",), ("--jsonl",)):
        views[" ".join(("turnstate_unresumable", *form))] = View(
            command("turnstate_unresumable", *form), "command", whole_store=True
        )
    views["turnstate_purge --older-than 30 --dry-run"] = View(
        command("turnstate_purge", "--older-than", "30", "--dry-run"), "command", whole_store=True
    )
    views["turnstate_expire --dry-run"] = View(command("turnstate_expire", "--dry-run"), "command")
    views["turnstate_redeliver --dry-run"] = View(command("turnstate_redeliver", "--dry-run"), "command")
    views["turnstate_redeliver --stalled"] = View(command("turnstate_redeliver", "--stalled"), "command")
    views["turnstate_rotate_keys --dry-run"] = View(
        command("turnstate_rotate_keys", "--dry-run"), "command", whole_store=True
    )
    return {name: view for name, view in views.items() if wanted(name)}
