"""How the admin shows stored values and the links between a pause and its rows.

Values are the app's own JSON, often a whole transcript: shown pretty-printed and cut at
``VALUE_PREVIEW_CHARS`` with a link to the whole text, so a row's page stays light.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

from turnstate_app.checkpoints import ANSWER_KEY_PREFIX
from turnstate_app.errors import UnreadableValueError
from turnstate_app.models import CheckpointMetadata, Pause, RowKind
from turnstate_app.turnstate import TURN_STATE_KEY_PREFIX

VALUE_PREVIEW_CHARS = 10_000


def pretty(raw: str) -> str:
    """Indented JSON when ``raw`` is JSON, else ``raw`` as it is."""
    try:
        return json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
    except ValueError:
        return raw


def json_text(value: Any) -> str:
    """``value`` as indented JSON: JSON text is parsed first (a text that is not JSON stays as it
    is), and what JSON cannot hold is spelt as pydantic dumps it, or as its ``str``."""
    if isinstance(value, str):
        return pretty(value)
    return json.dumps(value, indent=2, ensure_ascii=False, default=_plain)


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if callable(dump) else str(value)


def json_block(value: Any) -> SafeString:
    """``value`` indented, escaped, in the ``<pre>`` the stylesheet wraps and bounds (it scrolls):
    one line of JSON would run past the page's width, and the data may hold markup."""
    return format_html('<pre class="turnstate-value">{}</pre>', json_text(value))


def shown_value(row: CheckpointMetadata) -> str:
    """The row's value as written (decrypted), or why it cannot be read (never any of it)."""
    try:
        return pretty(row.plain_value())
    except UnreadableValueError as exc:
        return _("(unreadable: %(reason)s)") % {"reason": exc}


def value_block(row: CheckpointMetadata) -> SafeString:
    """The row's value, pretty-printed in a ``<pre>``; past the preview length, cut, with a link."""
    text = shown_value(row)
    if len(text) <= VALUE_PREVIEW_CHARS:
        return format_html('<pre class="turnstate-value">{}</pre>', text)
    whole = reverse("admin:turnstate_app_checkpointmetadata_value", args=[row.pk])
    return format_html(
        '<pre class="turnstate-value">{}…</pre><p>{} <a href="{}">{}</a></p>',
        text[:VALUE_PREVIEW_CHARS],
        _("Showing %(shown)s of %(total)s characters.") % {"shown": VALUE_PREVIEW_CHARS, "total": len(text)},
        whole,
        _("The whole value"),
    )


def short_id(value: str | None, *, kind: str = "id", url: str | None = None) -> SafeString:
    """An id cut to its column's width by the stylesheet, whole on hover (``title``) and in the
    page's text (search, copy); a link when ``url`` is given. ``kind`` picks the width: ``jti``
    (narrowest: a token id is 32 random characters), ``key`` or ``id``."""
    if value is None:
        return format_html("{}", "—")
    span = format_html('<span class="turnstate-id turnstate-{}" title="{}">{}</span>', kind, value, value)
    return span if url is None else format_html('<a href="{}">{}</a>', url, span)


def row_link(row: CheckpointMetadata) -> SafeString:
    url = reverse("admin:turnstate_app_checkpointmetadata_change", args=[row.pk])
    return format_html('<a href="{}">{}</a>', url, row.key)


def pause_link(pause: Pause) -> SafeString:
    url = reverse("admin:turnstate_app_pause_change", args=[pause.pk])
    return format_html('<a href="{}">{}</a> ({})', url, pause.jti, pause.get_status_display())


ROWS_ATTRIBUTE = "turnstate_store_rows"
"""Where :func:`rows_of` keeps a changelist row's store rows, on the row's own instance."""


def rows_of(pause: Pause) -> dict[str, CheckpointMetadata]:
    """The pause's request, turn-state and answer rows that exist, by key; one query, cached."""
    cached: dict[str, CheckpointMetadata] | None = getattr(pause, ROWS_ATTRIBUTE, None)
    if cached is None:
        keys = [pause.request_key, TURN_STATE_KEY_PREFIX + pause.jti, ANSWER_KEY_PREFIX + pause.jti]
        found = CheckpointMetadata.objects.filter(
            thread_id=pause.thread_id, checkpoint_id=pause.checkpoint_id, key__in=keys
        )
        cached = {row.key: row for row in found}
        setattr(pause, ROWS_ATTRIBUTE, cached)
    return cached


def store_rows(pause: Pause) -> SafeString:
    """A line per row the pause points at: a link when it is there, "absent" when not."""
    rows = rows_of(pause)
    labels = (
        (_("request"), pause.request_key),
        (_("turn state"), TURN_STATE_KEY_PREFIX + pause.jti),
        (_("answer"), ANSWER_KEY_PREFIX + pause.jti),
    )
    return format_html_join(
        "",
        "<div>{}: {}</div>",
        ((label, row_link(rows[key]) if key in rows else _("absent")) for label, key in labels),
    )


def pauses_of(row: CheckpointMetadata) -> list[Pause]:
    """The ledger pauses a store row belongs to (a request row may serve a retried call's two)."""
    if row.kind == RowKind.REQUEST:
        return list(
            Pause.objects.filter(
                thread_id=row.thread_id, checkpoint_id=row.checkpoint_id, request_key=row.key
            ).order_by("pk")
        )
    for prefix in (TURN_STATE_KEY_PREFIX, ANSWER_KEY_PREFIX):
        if row.key.startswith(prefix):
            return list(Pause.objects.filter(jti=row.key[len(prefix) :], thread_id=row.thread_id))
    return []


def pause_links(row: CheckpointMetadata) -> SafeString:
    pauses = pauses_of(row)
    if not pauses:
        return format_html("{}", _("— (no ledger pause owns this row)"))
    return format_html_join(", ", "{}", ((pause_link(pause),) for pause in pauses))


class ReadOnlyModelAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Rows the app and its integrations write through their own code only: view permission is
    enough to look; no one may add, change or delete one here."""

    class Media:
        css = {"all": ("turnstate_app/admin.css",)}

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
