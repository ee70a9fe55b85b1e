"""Read-only pages for operators: threads (head, last change, what waits) and checkpoints.

Each page costs a fixed number of queries: the head and the waiting interrupts are
computed by the database in the list's one query.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from turnstate_app.contrib.langgraph.models import Checkpoint, LangGraphThread


class ReadOnlyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(LangGraphThread)
class LangGraphThreadAdmin(ReadOnlyAdmin):
    list_display = ("thread_id", "checkpoint_id", "updated", "pending_interrupts")
    search_fields = ("thread_id",)
    ordering = ("-created_at",)
    show_full_result_count = False
    fields = ("thread_id", "checkpoint_id", "parent_checkpoint_id", "run_id", "created_at", "metadata")

    def get_queryset(self, request: HttpRequest) -> QuerySet[LangGraphThread]:
        return super().get_queryset(request).heads().with_pending_interrupts()  # type: ignore[attr-defined,no-any-return]

    @admin.display(description="pending interrupts", ordering="pending_interrupts")
    def pending_interrupts(self, obj: LangGraphThread) -> int:
        return obj.pending_interrupts

    @admin.display(description="updated", ordering="created_at")
    def updated(self, obj: LangGraphThread) -> Any:
        return obj.created_at


@admin.register(Checkpoint)
class CheckpointAdmin(ReadOnlyAdmin):
    list_display = (
        "thread_id",
        "checkpoint_ns",
        "checkpoint_id",
        "parent_checkpoint_id",
        "run_id",
        "created_at",
    )
    list_filter = ("created_at",)
    search_fields = ("thread_id", "checkpoint_id", "run_id")
    ordering = ("-created_at",)
    show_full_result_count = False
    fields = (
        "thread_id",
        "checkpoint_ns",
        "checkpoint_id",
        "parent_checkpoint_id",
        "run_id",
        "type",
        "encryption_key_id",
        "created_at",
        "metadata",
    )
