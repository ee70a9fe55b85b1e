"""A read-only page for operators: conversations, who they belong to, what they wait on.

A list page costs a fixed number of queries: the pending pauses are counted by the
database in the list's one query, and the waiting tool calls are read from the row.
A conversation's page shows its history, loaded in one query, and each JSON value indented
in a block of bounded height (``turnstate_app/admin.css``).
"""

from __future__ import annotations

import json

from django.contrib import admin
from django.db import router
from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest
from django.utils import timezone
from django.utils.safestring import SafeString

from turnstate_app.admin_display import ReadOnlyModelAdmin, json_block
from turnstate_app.choices import PauseStatus
from turnstate_app.contrib.pydantic_ai.models import StoredConversation
from turnstate_app.errors import PayloadBindingError
from turnstate_app.models import Pause


@admin.register(StoredConversation)
class StoredConversationAdmin(ReadOnlyModelAdmin):
    list_display = (
        "conversation_id",
        "scope",
        "updated_at",
        "waiting_calls",
        "pending_pauses",
        "forked_from",
    )
    search_fields = ("conversation_id", "scope")
    list_filter = ("updated_at",)
    ordering = ("-updated_at",)
    show_full_result_count = False
    fields = (
        "conversation_id",
        "scope",
        "updated_at",
        "head_id",
        "revision",
        "forked_from",
        "forked_at",
        "shown_branches",
        "shown_usage",
        "waiting_on",
        "encryption_key_id",
        "format_version",
        "transcript",
    )
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[StoredConversation]:
        pending = (
            Pause.objects.in_effective_status(PauseStatus.PENDING, timezone.now())
            .filter(thread_id=OuterRef("conversation_id"))
            .order_by()
            .values("thread_id")
            .annotate(n=Count("pk"))
            .values("n")
        )
        rows: QuerySet[StoredConversation] = super().get_queryset(request)
        return rows.annotate(pending_pauses=Coalesce(Subquery(pending, output_field=IntegerField()), 0))

    @admin.display(description="pending pauses", ordering="pending_pauses")
    def pending_pauses(self, obj: StoredConversation) -> int:
        return int(obj.pending_pauses)  # type: ignore[attr-defined]

    @admin.display(description="waiting tool calls")
    def waiting_calls(self, obj: StoredConversation) -> int:
        try:
            requests = json.loads(_requests(obj) or "")
        except (ValueError, PayloadBindingError):
            return 0
        return len(requests.get("calls", [])) + len(requests.get("approvals", []))

    @admin.display(description="usage")
    def shown_usage(self, obj: StoredConversation) -> SafeString:
        return json_block(obj.usage)

    @admin.display(description="branches")
    def shown_branches(self, obj: StoredConversation) -> SafeString:
        return json_block(obj.branches)

    @admin.display(description="deferred tool requests")
    def waiting_on(self, obj: StoredConversation) -> str:
        """The tool calls the conversation waits on, decrypted (or why they cannot be read)."""
        try:
            requests = _requests(obj)
        except PayloadBindingError as exc:
            return f"(unreadable: {exc})"
        return "—" if requests is None else json_block(requests)

    @admin.display(description="transcript")
    def transcript(self, obj: StoredConversation) -> str:
        """The conversation's messages as PydanticAI reads them back. PydanticAI is imported here,
        on the page that shows them: Django loads every admin module at start-up, and a process
        that never opens this page should not pay for importing the framework."""
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        from turnstate_app.contrib.pydantic_ai import history

        try:
            entries = history.read_history(router.db_for_read(type(obj), instance=obj), obj.head_id, None)
        except LookupError:
            return "(the history is incomplete: an entry it points at is gone)"
        except PayloadBindingError as exc:
            return f"(unreadable: {exc})"
        messages = [entry.message for entry in entries]
        return json_block(ModelMessagesTypeAdapter.dump_json(messages).decode())


def _requests(obj: StoredConversation) -> str | None:
    """The row's deferred tool requests as written, once its MAC verifies (the codec, and PydanticAI
    with it, imported when a row is shown, as in :meth:`StoredConversationAdmin.transcript`)."""
    from turnstate_app.contrib.pydantic_ai.codec import stored_requests

    return stored_requests(
        obj.conversation_id, obj.deferred_tool_requests, obj.encryption_key_id, obj.value_mac
    )
