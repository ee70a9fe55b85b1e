"""Read-only pages for operators: threads (head, last change, what waits) and checkpoints.

Each list costs a fixed number of queries: the head and the waiting interrupts are
computed by the database in the list's one query. A checkpoint's page (a thread's: its head)
shows its state values as the saver reads them back (decrypted, through its serializer), and
both link to the ledger's pauses made there.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import router
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import urlencode
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _

from turnstate_app.admin_display import ReadOnlyModelAdmin, json_block
from turnstate_app.contrib.langgraph.errors import UnreadableCheckpointError
from turnstate_app.contrib.langgraph.models import Checkpoint, LangGraphThread


class ReadOnlyAdmin(ReadOnlyModelAdmin):
    def pauses_link(self, label: str, **where: str) -> SafeString:
        """The ledger's change list filtered to ``where`` (fields of the pause, exactly)."""
        url = reverse(f"{self.admin_site.name}:turnstate_app_pause_changelist") + "?" + urlencode(where)
        return format_html('<a href="{}">{}</a>', url, label)

    @admin.display(description=_("metadata"))
    def shown_metadata(self, obj: Checkpoint) -> SafeString:
        return json_block(obj.metadata)

    @admin.display(description=_("state values"))
    def state_values(self, obj: Checkpoint) -> SafeString:
        """The checkpoint's channel values, read back as a run would read them, or why they cannot be.

        The saver (and LangGraph with it) is imported here, on the page that reads a state: Django
        loads every admin module at start-up, and a process that never opens this page (a worker,
        each ``manage.py`` command) should not pay for importing the framework."""
        from turnstate_app.contrib.langgraph.rows import config_of
        from turnstate_app.contrib.langgraph.saver import DjangoCheckpointSaver

        saver = DjangoCheckpointSaver(using=router.db_for_read(Checkpoint, instance=obj))
        try:
            found = saver.get_tuple(config_of(obj.thread_id, obj.checkpoint_ns, obj.checkpoint_id))
        except UnreadableCheckpointError as exc:
            return format_html('<pre class="turnstate-value">{}</pre>', _("(unreadable: %s)") % exc)
        if found is None:
            return format_html("{}", _("— (the checkpoint is gone)"))
        return json_block(found.checkpoint["channel_values"])


@admin.register(LangGraphThread)
class LangGraphThreadAdmin(ReadOnlyAdmin):
    list_display = ("thread_id", "checkpoint_id", "updated", "pending_interrupts", "pauses")
    search_fields = ("thread_id",)
    ordering = ("-created_at",)
    show_full_result_count = False
    fields = (
        "thread_id",
        "checkpoint_id",
        "parent_checkpoint_id",
        "run_id",
        "created_at",
        "pauses",
        "shown_metadata",
        "state_values",
    )
    readonly_fields = ("pauses", "shown_metadata", "state_values")

    def get_queryset(self, request: HttpRequest) -> QuerySet[LangGraphThread]:
        return super().get_queryset(request).heads().with_pending_interrupts()  # type: ignore[attr-defined,no-any-return]

    @admin.display(description="pending interrupts", ordering="pending_interrupts")
    def pending_interrupts(self, obj: LangGraphThread) -> int:
        return obj.pending_interrupts

    @admin.display(description="updated", ordering="created_at")
    def updated(self, obj: LangGraphThread) -> Any:
        return obj.created_at

    @admin.display(description=_("pauses"))
    def pauses(self, obj: LangGraphThread) -> SafeString:
        return self.pauses_link(str(_("pauses of this thread")), thread_id=obj.thread_id)


@admin.register(Checkpoint)
class CheckpointAdmin(ReadOnlyAdmin):
    list_display = (
        "thread_id",
        "checkpoint_ns",
        "checkpoint_id",
        "parent_checkpoint_id",
        "run_id",
        "created_at",
        "pauses",
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
        "pauses",
        "shown_metadata",
        "state_values",
    )
    readonly_fields = ("pauses", "shown_metadata", "state_values")

    @admin.display(description=_("pauses"))
    def pauses(self, obj: Checkpoint) -> SafeString:
        return self.pauses_link(
            str(_("pauses at this checkpoint")), thread_id=obj.thread_id, checkpoint_id=obj.checkpoint_id
        )
