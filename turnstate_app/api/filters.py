"""Query-string filters (django-filter): exact ids, a pause's effective status, a literal key prefix.

Ids are capped at 255 characters and NUL is refused by the form fields, so a bad filter is
a 400 before it could become a database error (PostgreSQL cannot hold NUL in text).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet, Value
from django.db.models.functions import Left
from django.db.models.lookups import Exact
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django_filters import rest_framework as filters
from drf_spectacular.utils import extend_schema_field

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

from turnstate_app.models import ID_MAX_LENGTH, CheckpointMetadata, Pause, PauseQuerySet, PauseStatus


def id_filter(help_text: StrOrPromise) -> Any:
    # strip=False: ids compare byte for byte, so "t1 " is not "t1".
    return filters.CharFilter(max_length=ID_MAX_LENGTH, strip=False, help_text=help_text)


@extend_schema_field({"type": "boolean", "description": _("`true` or `false`; anything else is a 400.")})
class StrictBooleanFilter(filters.TypedChoiceFilter):  # type: ignore[misc]
    """``true`` or ``false`` only: django-filter's own BooleanFilter ignores anything else silently."""

    def __init__(self, **kwargs: Any) -> None:
        choices = (("true", "true"), ("false", "false"))
        super().__init__(choices=choices, coerce=lambda value: value == "true", **kwargs)


class PauseFilter(filters.FilterSet):  # type: ignore[misc]  # django-filter ships no types
    """``status`` is what a resume would meet now: a pending pause past ``expires_at`` is expired."""

    status = filters.ChoiceFilter(
        choices=PauseStatus.choices, method="filter_status", help_text=_("pending, answered or expired.")
    )
    resumable = StrictBooleanFilter()  # whether the turn state was recorded at mint
    thread_id = id_filter(_("Exact thread id."))
    session_id = id_filter(_("Exact session id."))
    run_id = id_filter(_("Exact run id."))
    group = id_filter(_("Exact group id: the pauses answered together before their run continues."))

    class Meta:
        model = Pause
        fields = ("status", "resumable", "thread_id", "session_id", "run_id", "group")

    def filter_status(self, queryset: PauseQuerySet, name: str, value: str) -> QuerySet[Pause]:
        return queryset.in_effective_status(value, timezone.now())


class CheckpointFilter(filters.FilterSet):  # type: ignore[misc]
    thread_id = id_filter(_("Exact thread id."))
    checkpoint_id = id_filter(_("Exact checkpoint id."))
    key_prefix = filters.CharFilter(
        method="filter_key_prefix",
        max_length=ID_MAX_LENGTH,
        strip=False,
        help_text=_("Keys starting with exactly this text: case-sensitive, and % and _ are literal."),
    )

    class Meta:
        model = CheckpointMetadata
        fields = ("thread_id", "checkpoint_id", "key_prefix")

    def filter_key_prefix(
        self, queryset: QuerySet[CheckpointMetadata], name: str, value: str
    ) -> QuerySet[CheckpointMetadata]:
        # Not LIKE (startswith): SQLite's LIKE ignores ASCII case, and % and _ would need
        # escaping. The first len(value) characters compared for equality are exact on
        # every database (MariaDB's id columns have a binary collation, migration 0002).
        return queryset.filter(Exact(Left("key", len(value)), Value(value)))
