"""Read-only pages for operators: each paused run's latest state, and the sessions' items.

A list page costs a fixed number of queries: the pending pauses of each run are counted
by the database in the list's one query; the state's size is the database's ``LENGTH`` (of the
stored text: the token, when it is encrypted). A detail page shows the value decrypted once its MAC
verifies, or "(unreadable: ...)" saying why it cannot be (never the stored value, never a crash); its JSON
indented in a block of bounded height (``turnstate_app/admin.css``).
"""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce, Length
from django.http import HttpRequest
from django.utils import timezone

from turnstate_app.admin_display import ReadOnlyModelAdmin, json_block
from turnstate_app.choices import PauseStatus
from turnstate_app.contrib.openai_agents.codec import item_text, state_text
from turnstate_app.contrib.openai_agents.models import StoredRunState, StoredSessionItem
from turnstate_app.errors import UnreadableValueError
from turnstate_app.models import Pause


@admin.register(StoredRunState)
class StoredRunStateAdmin(ReadOnlyModelAdmin):
    list_display = (
        "run_id",
        "thread_id",
        "agent",
        "schema_version",
        "state_size",
        "pending_pauses",
        "updated_at",
    )
    search_fields = ("run_id", "thread_id", "session_id", "agent")
    list_filter = ("agent", "schema_version", "updated_at")
    ordering = ("-updated_at",)
    show_full_result_count = False
    fields = (
        "run_id",
        "thread_id",
        "session_id",
        "agent",
        "revision",
        "schema_version",
        "created_at",
        "updated_at",
        "encryption_key_id",
        "run_state",
    )
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[StoredRunState]:
        pending = (
            Pause.objects.in_effective_status(PauseStatus.PENDING, timezone.now())
            .filter(run_id=OuterRef("run_id"))
            .order_by()
            .values("run_id")
            .annotate(n=Count("pk"))
            .values("n")
        )
        rows: QuerySet[StoredRunState] = super().get_queryset(request)
        return rows.annotate(
            pending_pauses=Coalesce(Subquery(pending, output_field=IntegerField()), 0), size=Length("state")
        )

    @admin.display(description="pending pauses", ordering="pending_pauses")
    def pending_pauses(self, obj: StoredRunState) -> int:
        return int(obj.pending_pauses)  # type: ignore[attr-defined]

    @admin.display(description="state size (characters)", ordering="size")
    def state_size(self, obj: StoredRunState) -> int:
        return int(obj.size)  # type: ignore[attr-defined]

    @admin.display(description="state")
    def run_state(self, obj: StoredRunState) -> str:
        try:
            state = state_text(
                obj.state,
                obj.encryption_key_id,
                obj.value_mac,
                run_id=obj.run_id,
                thread_id=obj.thread_id,
                revision=obj.revision,
            )
        except UnreadableValueError as exc:
            return f"(unreadable: {exc})"
        return json_block(state)


@admin.register(StoredSessionItem)
class StoredSessionItemAdmin(ReadOnlyModelAdmin):
    list_display = ("session_id", "id", "created_at")
    search_fields = ("session_id",)
    list_filter = ("created_at",)
    ordering = ("session_id", "-id")
    show_full_result_count = False
    fields = ("session_id", "created_at", "encryption_key_id", "session_item")
    readonly_fields = fields

    @admin.display(description="item")
    def session_item(self, obj: StoredSessionItem) -> str:
        try:
            item = item_text(obj.item, obj.encryption_key_id, obj.value_mac, session_id=obj.session_id)
        except UnreadableValueError as exc:
            return f"(unreadable: {exc})"
        return json_block(item)
