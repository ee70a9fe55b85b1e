"""Read-only pages for operators: ADK sessions (with their event counts) and their events.

A list page costs a fixed number of queries: a session's events are counted by the database in
the list's one query, an event's session comes with it (``list_select_related``). A detail page
shows the value decrypted once its MAC verifies, or "(unreadable: ...)" saying why it cannot be
(never the stored value, never a crash); its JSON indented in a block of bounded height.
"""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from turnstate_app.admin_display import ReadOnlyModelAdmin, json_block
from turnstate_app.contrib.google_adk.codec import EVENT, SESSION, plain_text
from turnstate_app.contrib.google_adk.models import StoredEvent, StoredSession
from turnstate_app.errors import UnreadableValueError


@admin.register(StoredSession)
class StoredSessionAdmin(ReadOnlyModelAdmin):
    list_display = ("session_id", "app_name", "user_id", "event_count", "updated_at")
    search_fields = ("session_id", "app_name", "user_id")
    list_filter = ("app_name", "updated_at")
    ordering = ("-updated_at",)
    show_full_result_count = False
    fields = (
        "app_name",
        "user_id",
        "session_id",
        "created_at",
        "updated_at",
        "encryption_key_id",
        "session_state",
    )
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[StoredSession]:
        rows: QuerySet[StoredSession] = super().get_queryset(request)
        return rows.annotate(events_stored=Count("events"))

    @admin.display(description="events", ordering="events_stored")
    def event_count(self, obj: StoredSession) -> int:
        return int(obj.events_stored)  # type: ignore[attr-defined]

    @admin.display(description="state")
    def session_state(self, obj: StoredSession) -> str:
        try:
            text = plain_text(
                SESSION,
                obj.state,
                obj.encryption_key_id,
                obj.value_mac,
                thread=obj.session_id,
                identity=(obj.app_name, obj.user_id, obj.session_id),
            )
        except UnreadableValueError as exc:
            return f"(unreadable: {exc})"
        return json_block(text)


@admin.register(StoredEvent)
class StoredEventAdmin(ReadOnlyModelAdmin):
    list_display = ("event_id", "session", "invocation_id", "timestamp")
    list_select_related = ("session",)
    search_fields = ("event_id", "invocation_id", "session__session_id")
    list_filter = ("timestamp",)
    ordering = ("-timestamp", "-id")
    show_full_result_count = False
    fields = ("session", "event_id", "invocation_id", "timestamp", "encryption_key_id", "stored_event")
    readonly_fields = fields

    @admin.display(description="event")
    def stored_event(self, obj: StoredEvent) -> str:
        session = obj.session
        try:
            text = plain_text(
                EVENT,
                obj.event,
                obj.encryption_key_id,
                obj.value_mac,
                thread=session.session_id,
                identity=(session.app_name, session.user_id, session.session_id, obj.event_id),
            )
        except UnreadableValueError as exc:
            return f"(unreadable: {exc})"
        return json_block(text)
