"""Admin for looking, not editing: the store, the ledger, and the pauses that cannot be continued.

Nothing here adds, changes or deletes, not even for superusers: retention goes through
``turnstate_purge``, which keeps a pause's rows together. Each change list costs a constant
number of queries whatever the page holds.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Q, QuerySet
from django.forms import ModelForm
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import escape, format_html
from django.utils.http import urlencode
from django.utils.timesince import timesince
from django.utils.translation import gettext_lazy as _

from turnstate_app import admin_display
from turnstate_app.admin_display import VALUE_PREVIEW_CHARS
from turnstate_app.after_answer import FIGURE
from turnstate_app.errors import KeyRingError
from turnstate_app.keyset import BadCursorError, cursor_of, keyset_after
from turnstate_app.managers import (
    CLAIM_FIELDS,
    EFFECTIVE_STATUS,
    GROUP_STATE,
    GROUP_STATES,
    RESUMABLE_NOW,
    UNRESUMABLE_KINDS,
    CheckpointMetadataQuerySet,
    resumable_now_q,
)
from turnstate_app.models import (
    CheckpointMetadata,
    ContinuationState,
    Pause,
    PauseStatus,
    RowKind,
    UnresumablePause,
)

__all__ = ["VALUE_PREVIEW_CHARS"]


class AgeFilter(admin.SimpleListFilter):
    """By ``created_at``: the recent ones, or those old enough to be purged."""

    title = _("age")
    parameter_name = "age"
    SPANS = {
        "1h": (timedelta(hours=1), True, _("less than an hour")),
        "1d": (timedelta(days=1), True, _("less than a day")),
        "7d": (timedelta(days=7), True, _("less than a week")),
        "gt7d": (timedelta(days=7), False, _("older than a week")),
        "gt30d": (timedelta(days=30), False, _("older than 30 days")),
    }

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [(value, label) for value, (_span, _newer, label) in self.SPANS.items()]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() not in self.SPANS:
            return queryset
        span, newer, _label = self.SPANS[str(self.value())]
        cutoff = timezone.now() - span
        return queryset.filter(created_at__gte=cutoff) if newer else queryset.filter(created_at__lt=cutoff)


class KindFilter(admin.SimpleListFilter):
    """The row kinds, from the code: Django would ask the database for a generated field's values."""

    title = _("kind")
    parameter_name = "kind"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return list(RowKind.choices)

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return queryset.filter(kind=self.value()) if self.value() in RowKind.values else queryset


class EffectiveStatusFilter(admin.SimpleListFilter):
    """By the status an answer now would meet: a pending pause past its age is listed as expired.

    Keeps the field filter's parameter (``status__exact``), so links to it keep working.
    """

    title = _("status")
    parameter_name = "status__exact"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return list(PauseStatus.choices)

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value not in PauseStatus.values:
            return queryset
        return queryset.in_effective_status(str(value), timezone.now())  # type: ignore[attr-defined, no-any-return]


class GroupStateFilter(admin.SimpleListFilter):
    """By where the pause's group stands; "failed" lists the groups that will never continue by themselves."""

    title = _("group state")
    parameter_name = "group_state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [(state, _(state)) for state in GROUP_STATES]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value not in GROUP_STATES:
            return queryset
        return queryset.in_group_state(str(value), timezone.now())  # type: ignore[attr-defined, no-any-return]


class ResumableNowFilter(admin.SimpleListFilter):
    """By ``managers.resumable_now_q``; "yes" reads the answerable pauses through the status index."""

    title = _("resumable now")
    parameter_name = RESUMABLE_NOW

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [("1", _("Yes")), ("0", _("No"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        now = timezone.now()
        if self.value() == "1":
            return queryset.filter(resumable_now_q(now, CheckpointMetadata))
        if self.value() == "0":
            return queryset.exclude(resumable_now_q(now, CheckpointMetadata))
        return queryset


class RecordedAtPauseFilter(admin.BooleanFieldListFilter):
    """The ``resumable`` field's filter, named for what the field holds: the outcome at mint."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.title = _("state recorded at pause")


FIGURE_STATES = (ContinuationState.QUEUED, ContinuationState.RUNNING)
"""States the filter offers as ``turnstate_status`` splits them
(awaiting hand-off / queued, running / stalled)."""


class ContinuationFilter(admin.SimpleListFilter):
    """By where the run's continuation stands (the states of ``turnstate_app.after_answer``);
    "awaiting hand-off" and "stalled" are what ``turnstate_redeliver`` and its ``--stalled`` list."""

    title = _("continuation")
    parameter_name = "continuation"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return [
            ("awaiting_handoff", _("awaiting hand-off")),
            ("queued", _("queued (handed off)")),
            ("running", _("running")),
            ("stalled", _("stalled (claimed, never returned)")),
            ("failed_continuations", _("failed, crashed or refused")),
            *((state.value, state.label) for state in ContinuationState if state not in FIGURE_STATES),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        ledger: Any = queryset
        if value == "awaiting_handoff":
            return ledger.awaiting_handoff()  # type: ignore[no-any-return]
        if value == "queued":
            return ledger.queued()  # type: ignore[no-any-return]
        if value == "running":
            return ledger.running(timezone.now())  # type: ignore[no-any-return]
        if value == "stalled":
            return ledger.stalled(timezone.now())  # type: ignore[no-any-return]
        if value == "failed_continuations":
            return ledger.continuation_failed()  # type: ignore[no-any-return]
        if value in ContinuationState.values:
            return queryset.filter(continuation=value)
        return queryset


AFTER_VAR = "after"
"""The query parameter of a keyset page: the sort key of the last row of the page before."""


class GuardedChangeList(ChangeList):
    """Refuses a NUL anywhere in the query string as the admin refuses any bad lookup (``?e=1``).

    PostgreSQL cannot hold NUL in text, so a filter or search carrying one would otherwise
    fail in the database, as a 500, instead of being a bad request.
    """

    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> QuerySet[Any]:
        if any("\x00" in key or "\x00" in value for key, values in request.GET.lists() for value in values):
            raise IncorrectLookupParameters("NUL in the query string")
        return super().get_queryset(request, exclude_parameters)


NEWEST_FIRST = ("-created_at", "-pk")
"""The order of the admin's lists: that of their ``(created_at, id)`` indexes, read backwards, so a
page and an age filter's page read that index from where they start, whatever order the ids
were given in."""


class KeysetChangeList(GuardedChangeList):
    """Pages by the sort key of the last row shown (``?after=``), never by OFFSET, and never counts.

    For the lists that grow with the store and the ledger: page 100 reads what page 1 reads (the
    index from the cursor on), and nothing is counted (counting unresumable rows means judging
    every request row). The order is the admin's fixed ``ordering`` (newest first), which is
    what a cursor is a key of: ``("-pk",)`` or ``("-created_at", "-pk")``; columns do not sort.
    The footer says how many rows this page holds, links the next page when more follow, and
    the first page when this is not it.
    """

    keyset = True
    has_more = False
    next_url: str | None = None
    first_url: str | None = None

    def get_filters_params(self, params: Any = None) -> Any:
        lookup_params = super().get_filters_params(params)
        lookup_params.pop(AFTER_VAR, None)
        return lookup_params

    def get_query_string(self, new_params: Any = None, remove: Any = None) -> str:
        """Every link but "next page" starts from the first page again (a filter, a search)."""
        if not new_params or AFTER_VAR not in new_params:
            remove = [*(remove or []), AFTER_VAR]
        return str(super().get_query_string(new_params, remove))

    def get_ordering(self, request: HttpRequest, queryset: QuerySet[Any]) -> list[Any]:
        return list(self.model_admin.ordering or ("-pk",))

    def get_results(self, request: HttpRequest) -> None:
        after = request.GET.get(AFTER_VAR)
        keys = [field.lstrip("-") for field in self.get_ordering(request, self.queryset)]
        try:
            rows_after = self.queryset if after is None else self.queryset.filter(keyset_after(keys, after))
        except BadCursorError as error:
            message = _("This page's cursor is not one of this list's: showing the first page.")
            self.model_admin.message_user(request, message, level="error")
            raise IncorrectLookupParameters(str(error)) from error
        rows = list(rows_after[: self.list_per_page + 1])
        self.has_more = len(rows) > self.list_per_page
        self.result_list = rows[: self.list_per_page]
        self.result_count = len(self.result_list)
        # The search bar's "N results (Show all)" appears when these differ: it would call this
        # page's rows a total. The footer says what is known.
        self.full_result_count = self.result_count
        self.show_full_result_count = False
        self.show_admin_actions = False
        self.can_show_all = False
        self.multi_page = False  # no numbered pages: the footer links the next one
        self.paginator = Paginator(self.result_list, self.list_per_page)
        if self.has_more:
            last_key = [getattr(self.result_list[-1], key) for key in keys]
            self.next_url = self.get_query_string({AFTER_VAR: cursor_of(last_key)})
        if after is not None:
            self.first_url = self.get_query_string()


class PauseChangeList(KeysetChangeList):
    """The pause list: "resumable now" asked of the page's rows only, one query, so the store is
    probed for the rows shown and never scanned whole."""

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        pks = [pause.pk for pause in self.result_list]
        holds = Pause.objects.resumable_now_among(pks, timezone.now()) if pks else set()
        for pause in self.result_list:
            setattr(pause, RESUMABLE_NOW, pause.pk in holds)


class WithoutValues(KeysetChangeList):
    """Lists store rows without loading ``value`` (up to MAX_VALUE_BYTES each); the detail shows it."""

    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> QuerySet[Any]:
        return super().get_queryset(request, exclude_parameters).defer("value")


class ReadOnlyAdmin(admin_display.ReadOnlyModelAdmin):
    """The ledger's and the store's pages: keyset paged, no actions, help texts escaped."""

    actions = None
    show_full_result_count = False
    list_per_page = 100

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return GuardedChangeList

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        """Help texts escaped: the admin renders them as HTML, and ``<tool_call_id>`` is a key's text."""
        texts = {field.name: escape(field.help_text) for field in self.model._meta.fields if field.help_text}
        form: type[ModelForm[Any]] = super().get_form(request, obj, change, help_texts=texts, **kwargs)
        return form


def sealed_value_block(row: CheckpointMetadata) -> str:
    """The row's value; when its thread's keys cannot be had, why, as the admin shows an error."""
    try:
        return admin_display.value_block(row)
    except KeyRingError as exc:
        return format_html('<p class="errornote">{}</p>', exc)


@admin.register(CheckpointMetadata)
class CheckpointMetadataAdmin(ReadOnlyAdmin):
    list_display = ("thread", "checkpoint", "row_key", "kind", "created_at", "updated_at")
    list_display_links = ("thread",)
    list_filter = (KindFilter, AgeFilter)
    search_fields = ("=thread_id",)  # what get_search_results matches: see there
    search_help_text = _("A thread id, or a token id (jti) for the rows of its pause's checkpoint, exactly.")
    ordering = NEWEST_FIRST  # turnstate_ckpt_created_idx
    sortable_by = ()  # pages follow the fixed order (KeysetChangeList)
    show_facets = admin.ShowFacets.NEVER  # "Show counts" would COUNT the whole store per filter
    fields = (
        "thread_id",
        "checkpoint_id",
        "key",
        "kind",
        "pause",
        "task_id",
        "encryption_key_id",
        "created_at",
        "updated_at",
        "pretty_value",
    )
    readonly_fields = ("pause", "pretty_value")

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return WithoutValues

    def get_urls(self) -> list[URLPattern]:
        whole = path(
            "<path:object_id>/value/",
            self.admin_site.admin_view(self.value_view),
            name="turnstate_app_checkpointmetadata_value",
        )
        return [whole, *super().get_urls()]

    def value_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The whole value, pretty-printed, as plain text: for values the row's page cuts short."""
        row = self.get_object(request, object_id)
        if row is None:
            raise Http404
        if not self.has_view_permission(request, row):
            raise PermissionDenied
        try:
            text = admin_display.shown_value(row)
        except KeyRingError as exc:
            return HttpResponse(str(exc), status=503, content_type="text/plain; charset=utf-8")
        return HttpResponse(text, content_type="text/plain; charset=utf-8")

    @admin.display(description=_("thread id"))
    def thread(self, row: CheckpointMetadata) -> str:
        return admin_display.short_id(row.thread_id)

    @admin.display(description=_("checkpoint id"))
    def checkpoint(self, row: CheckpointMetadata) -> str:
        return admin_display.short_id(row.checkpoint_id)

    @admin.display(description=_("key"))
    def row_key(self, row: CheckpointMetadata) -> str:
        return admin_display.short_id(row.key, kind="key")

    @admin.display(description=_("pause"))
    def pause(self, row: CheckpointMetadata) -> str:
        return admin_display.pause_links(row)

    @admin.display(description=_("value"))
    def pretty_value(self, row: CheckpointMetadata) -> str:
        return sealed_value_block(row)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        """Index lookups only, never a scan of the store: the thread's rows (the unique constraint
        leads with the thread id), or, for a jti, the rows of its pause's checkpoint (the jti is
        looked up in the ledger first, one query)."""
        term = search_term.strip()
        if not term:
            return queryset, False
        condition = Q(thread_id=term)
        pause = Pause.objects.filter(jti=term).values("thread_id", "checkpoint_id").first()
        if pause is not None:
            condition |= Q(thread_id=pause["thread_id"], checkpoint_id=pause["checkpoint_id"])
        return queryset.filter(condition), False


@admin.register(Pause)
class PauseAdmin(ReadOnlyAdmin):
    # Fits 1440 px with the navigation sidebar and the filters open: ids cut to their column
    # (whole on hover and on the pause's page), times as ages; expires_at is on the pause's page.
    list_display = (
        "token_id",
        "thread",
        "effective_status",
        RESUMABLE_NOW,
        "recorded_at_pause",
        "owner",
        "age",
        "answered",
    )
    list_display_links = ("token_id",)
    list_filter = (
        EffectiveStatusFilter,
        ResumableNowFilter,
        ("resumable", RecordedAtPauseFilter),
        ContinuationFilter,
        GroupStateFilter,
        AgeFilter,
    )
    list_select_related = ("owner",)
    search_fields = ("=jti", "=thread_id", "=run_id")
    search_help_text = _("A token id (jti), a thread id or a run id, exactly.")
    ordering = NEWEST_FIRST  # turnstate_pause_created_idx
    sortable_by = ()  # pages follow the fixed order (KeysetChangeList)
    readonly_fields = (
        "effective_status",
        RESUMABLE_NOW,
        "recorded_at_pause",
        "question",
        "answer",
        "store_rows",
        "group_state",
        "counted_as",
        "pretty_schema",
    )

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return PauseChangeList

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        """Exact matches, each an index lookup (the jti's, the thread's, the run's), never a LIKE."""
        term = search_term.strip()
        if not term:
            return queryset, False
        return queryset.filter(Q(jti=term) | Q(thread_id=term) | Q(run_id=term)), False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Pause]:
        now = timezone.now()
        pauses = super().get_queryset(request).with_effective_status(now)  # type: ignore[attr-defined]
        return pauses.with_group_state(now).with_figure(now)  # type: ignore[no-any-return]

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> Pause | None:
        """One pause's page, with what holds now (:class:`PauseChangeList` says it for a list)."""
        pause = super().get_object(request, object_id, from_field)
        if pause is not None:
            holds = Pause.objects.resumable_now_among([pause.pk], timezone.now())
            setattr(pause, RESUMABLE_NOW, pause.pk in holds)
        return pause

    @admin.display(description=_("jti"))
    def token_id(self, pause: Pause) -> str:
        return admin_display.short_id(pause.jti, kind="jti")

    @admin.display(description=_("thread id"))
    def thread(self, pause: Pause) -> str:
        return admin_display.short_id(pause.thread_id)

    @admin.display(description=_("age"))
    def age(self, pause: Pause) -> str:
        created = pause.created_at
        return format_html('<span title="{}">{}</span>', created.isoformat(), timesince(created))

    @admin.display(description=_("answered"))
    def answered(self, pause: Pause) -> str:
        if pause.answered_at is None:
            return "—"
        ago = _("%(time)s ago") % {"time": timesince(pause.answered_at)}
        return format_html('<span title="{}">{}</span>', pause.answered_at.isoformat(), ago)

    @admin.display(description=_("resumable now"), boolean=True)
    def resumable_now(self, pause: Pause) -> bool:
        """What holds now (``PauseQuerySet.resumable_now_among``), beside what was recorded at the pause."""
        return bool(getattr(pause, RESUMABLE_NOW, False))

    @admin.display(description=_("state recorded at pause"), boolean=True)
    def recorded_at_pause(self, pause: Pause) -> bool:
        """``resumable`` as earned at mint: whether the turn state was recorded then."""
        return pause.resumable

    @admin.display(description=_("status"), ordering="status")
    def effective_status(self, pause: Pause) -> str:
        """What an answer now would meet: the ledger marks a pending pause expired only later."""
        status = getattr(pause, EFFECTIVE_STATUS, None) or pause.status
        return str(PauseStatus(status).label)

    fieldsets = (
        (
            None,
            {
                "fields": (
                    "jti",
                    "effective_status",
                    RESUMABLE_NOW,
                    "recorded_at_pause",
                    "owner",
                    "question",
                    "answer",
                    "store_rows",
                )
            },
        ),
        (
            _("claims"),
            {
                "fields": (*(name for name in CLAIM_FIELDS if name != "jti"), "request_key"),
            },
        ),
        (_("times"), {"fields": ("created_at", "answered_at", "expires_at", "handed_off_at")}),
        (None, {"fields": ("unresumable_reason",)}),
        (
            _("continuation"),
            {
                "fields": (
                    "agent",
                    "group",
                    "group_state",
                    "continuation",
                    "counted_as",
                    "continuation_since",
                    "continuation_reason",
                    "continuation_attempts",
                    "continuation_retry_at",
                    "shown_digest",
                    "pretty_schema",
                )
            },
        ),
    )

    @admin.display(description=_("counted by turnstate_status as"))
    def counted_as(self, pause: Pause) -> str:
        figure = getattr(pause, FIGURE, None)
        return "—" if figure is None else str(figure)

    @admin.display(description=_("group state"))
    def group_state(self, pause: Pause) -> str:
        state = getattr(pause, GROUP_STATE, None)
        return "—" if state is None else str(_(state))

    @admin.display(description=_("answer schema"))
    def pretty_schema(self, pause: Pause) -> str:
        if pause.answer_schema is None:
            return str(_("— (any JSON answer)"))
        return admin_display.json_block(pause.answer_schema)

    @admin.display(description=_("question (request)"))
    def question(self, pause: Pause) -> str:
        row = admin_display.rows_of(pause).get(pause.request_key)
        return sealed_value_block(row) if row is not None else str(_("— (the request row is gone)"))

    @admin.display(description=_("answer"))
    def answer(self, pause: Pause) -> str:
        from turnstate_app.checkpoints import ANSWER_KEY_PREFIX

        row = admin_display.rows_of(pause).get(ANSWER_KEY_PREFIX + pause.jti)
        return sealed_value_block(row) if row is not None else str(_("— (not answered yet)"))

    @admin.display(description=_("rows in the store"))
    def store_rows(self, pause: Pause) -> str:
        return admin_display.store_rows(pause)


class ReasonFilter(admin.SimpleListFilter):
    title = _("reason")
    parameter_name = "reason"

    LABELS = dict(
        zip(
            UNRESUMABLE_KINDS,
            (_("no ledger row"), _("turn state not recorded"), _("checkpoints deleted")),
            strict=True,
        )
    )

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        return list(self.LABELS.items())

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        """The list of that kind made anew, not the whole list narrowed: a kind of stranded pauses
        starts from its pauses instead of probing every request row of the window. The first of
        ``list_filter``, so it is handed the list as the admin made it, nothing narrowed yet."""
        if self.value() not in self.LABELS:
            return queryset
        return CheckpointMetadataQuerySet(queryset.model, using=queryset.db).unresumable(reason=self.value())


@admin.register(UnresumablePause)
class UnresumablePauseAdmin(ReadOnlyAdmin):
    """Pending pauses whose question can be answered but whose run this store cannot continue."""

    # Fits 1440 px with the navigation sidebar and the filters open: ids cut to their column,
    # whole on hover and on the row's page; the reason's headline, whole on hover.
    list_display = ("thread", "checkpoint", "request_key", "pause", "age", "reason")
    list_display_links = ("thread",)
    readonly_fields = ("pause", "full_reason")
    list_filter = (ReasonFilter, AgeFilter)  # ReasonFilter first: it makes its list anew
    search_fields = ("=thread_id", "=jti")
    search_help_text = _("A thread id or a token id (jti), exactly.")
    ordering = NEWEST_FIRST  # the request rows' turnstate_ckpt_created_idx
    sortable_by = ()  # pages follow the fixed order (KeysetChangeList)
    show_facets = admin.ShowFacets.NEVER  # "Show counts" would judge every request row per filter
    # A page costs one query for where the list starts, then one probe of the ledger per request
    # row read until it is full; only request rows of the last TOKEN_MAX_AGE are read (and those of
    # a stranded pause), so a page never reads back through the store's history.
    list_per_page = 50

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return WithoutValues

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        """The thread's request rows, or the one of the pause a jti names: index lookups only (the
        jti is looked up in the ledger first, one query), never a probe of every request row."""
        term = search_term.strip()
        if not term:
            return queryset, False
        condition = Q(thread_id=term)
        pause = Pause.objects.filter(jti=term).values("thread_id", "checkpoint_id", "request_key").first()
        if pause is not None:
            condition |= Q(
                thread_id=pause["thread_id"], checkpoint_id=pause["checkpoint_id"], key=pause["request_key"]
            )
        return queryset.filter(condition), False

    @admin.display(description=_("thread id"))
    def thread(self, row: UnresumablePause) -> str:
        return admin_display.short_id(row.thread_id)

    @admin.display(description=_("checkpoint id"))
    def checkpoint(self, row: UnresumablePause) -> str:
        return admin_display.short_id(row.checkpoint_id)

    @admin.display(description=_("request key"), ordering="key")
    def request_key(self, row: UnresumablePause) -> str:
        return admin_display.short_id(row.key, kind="key")

    @admin.display(description=_("pause (jti)"), ordering="jti")
    def pause(self, row: UnresumablePause) -> str:
        if row.jti is None:
            return "—"
        url = reverse("admin:turnstate_app_pause_changelist") + "?" + urlencode({"q": row.jti})
        return admin_display.short_id(row.jti, kind="jti", url=url)

    @admin.display(description=_("age"), ordering="-created_at")
    def age(self, row: UnresumablePause) -> str:
        return timesince(row.created_at)

    @admin.display(description=_("reason"))
    def reason(self, row: UnresumablePause) -> str:
        """The reason's headline ("turn state not recorded", "no ledger row"); the whole of it on
        hover and on the row's page, so the column stays one line beside the ids."""
        what, _colon, _why = row.reason.partition(": ")
        headline = what.split(" (", 1)[0]
        return format_html('<span class="turnstate-reason" title="{}">{}</span>', row.reason, headline)

    @admin.display(description=_("reason"))
    def full_reason(self, row: UnresumablePause) -> str:
        return row.reason
