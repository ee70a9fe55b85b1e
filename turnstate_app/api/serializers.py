"""What goes over the wire: pauses without transcripts, checkpoint rows with ``value`` only one
at a time, and the error bodies, described for the OpenAPI schema.

Schema components, enums included, are named ``Turnstate…``, so the app's schema never
collides with the host project's own ``Pause``, ``Error`` or ``StatusEnum``.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from turnstate_app.errors import UnreadableValueError
from turnstate_app.managers import CLAIM_FIELDS, GROUP_STATES
from turnstate_app.models import CheckpointMetadata, Pause, PauseStatus, UnresumablePause
from turnstate_app.pause_rows import request_of
from turnstate_app.pauses import ResumedPause


@extend_schema_field({"type": "string", "enum": PauseStatus.values}, component_name="TurnstatePauseStatus")
class EffectiveStatusField(serializers.ReadOnlyField):
    """The status an answer now would meet (``PauseQuerySet.with_effective_status``): a pending
    pause past ``expires_at`` reads ``expired``, though the ledger marks it so only later."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(source="effective_status", **kwargs)


@extend_schema_field(
    {
        "description": _("The question, as given to mint_pause (any JSON); null when its row is gone."),
        "nullable": True,
        "readOnly": True,
    }
)
class RequestField(serializers.Field):  # type: ignore[type-arg]
    """The pause's request, read from the ``request_value`` annotation (one query per page),
    decrypted; null when its key is gone, like a row that is gone."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, value: Any) -> Any:
        return request_of(value)


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": {},
        "description": _(
            "The JSON Schema an answer must meet (checked before the token is spent), as given to "
            "mint_pause; null when any answer is accepted."
        ),
        "nullable": True,
        "readOnly": True,
    }
)
class AnswerSchemaField(serializers.ReadOnlyField):
    """The pause's ``answer_schema``: a client renders its form from it, not from a 400."""


@extend_schema_field(
    {"type": "string", "enum": list(GROUP_STATES), "nullable": True, "readOnly": True},
    component_name="TurnstateGroupState",
)
class GroupStateField(serializers.ReadOnlyField):
    """Where the pause's group stands: the ``group_state`` annotation
    (``PauseQuerySet.with_group_state``); null without a group."""


@extend_schema_serializer(component_name="TurnstatePause")
class PauseSerializer(serializers.ModelSerializer[Pause]):
    status = EffectiveStatusField(help_text=_("pending, answered or expired (a pending pause past its age)."))
    request = RequestField()
    answer_schema = AnswerSchemaField()
    group_state = GroupStateField(
        help_text="pending, complete, continued, stalled or failed; null for a pause without a group."
    )

    class Meta:
        model = Pause
        fields = (
            *CLAIM_FIELDS,
            "request_key",
            "request",
            "answer_schema",
            "resumable",
            "status",
            "owner",
            "created_at",
            "answered_at",
            "expires_at",
            "handed_off_at",
            "continuation",
            "group",
            "group_state",
        )
        read_only_fields = fields


@extend_schema_serializer(component_name="TurnstateResumeRequest")
class ResumeRequestSerializer(serializers.Serializer[Any]):
    """The body of an answer: the pause's token, as minted, and the person's answer."""

    # The token is only a string here: its signature, age and owner are the lifecycle's checks
    # (resume_pause), made in their fixed order before anything is consumed.

    token = serializers.CharField(trim_whitespace=False, help_text=_("The pause's token, as minted."))
    answer = serializers.JSONField(allow_null=True, help_text=_("The person's answer: any JSON value."))


@extend_schema_serializer(component_name="TurnstateResumed")
class ResumedSerializer(serializers.Serializer[ResumedPause]):
    jti = serializers.CharField(source="claims.jti", read_only=True)
    status = serializers.SerializerMethodField(help_text='Always "answered".')
    resumable = serializers.BooleanField(
        read_only=True, help_text=_("Whether this resume found a turn state to continue the run from.")
    )

    def get_status(self, resumed: ResumedPause) -> str:
        return PauseStatus.ANSWERED.value


@extend_schema_serializer(component_name="TurnstateUnresumablePause")
class UnresumablePauseSerializer(serializers.ModelSerializer[UnresumablePause]):
    jti = serializers.CharField(
        read_only=True, allow_null=True, help_text=_("The stranded pause; null: no ledger row.")
    )
    reason = serializers.CharField(read_only=True)

    class Meta:
        model = UnresumablePause
        fields = ("id", "thread_id", "checkpoint_id", "key", "jti", "reason", "created_at")
        read_only_fields = fields


CHECKPOINT_LIST_FIELDS = (
    "id",
    "thread_id",
    "checkpoint_id",
    "key",
    "kind",
    "task_id",
    "created_at",
    "updated_at",
)


@extend_schema_serializer(component_name="TurnstateStatus")
class StatusSerializer(serializers.Serializer[Any]):
    """The figures of ``turnstate_status``; a count named in ``capped`` is at least its value."""

    pending = serializers.IntegerField(help_text=_("Pending pauses, still answerable."))
    oldest_pending_age_seconds = serializers.IntegerField(
        allow_null=True, help_text=_("How long the oldest pending pause has waited; null: none waits.")
    )
    awaiting_handoff = serializers.IntegerField(
        help_text=_("Answered pauses whose hand-off to RESUME_HANDLER has not succeeded.")
    )
    queued = serializers.IntegerField(
        help_text=_("Answered pauses handed off, whose continuation waits for a worker or its group.")
    )
    running = serializers.IntegerField(help_text=_("Continuations claimed less than STALLED_AFTER ago."))
    stalled = serializers.IntegerField(
        help_text=_("Continuations claimed more than STALLED_AFTER ago that never finished.")
    )
    unresumable = serializers.IntegerField(
        help_text=_(
            "Pending pauses whose run this store cannot continue (request rows no ledger row owns "
            "are listed by the unresumable list only)."
        )
    )
    failed_groups = serializers.IntegerField(
        help_text=_("Pause groups that will not continue by themselves.")
    )
    failed_continuations = serializers.IntegerField(
        help_text=_(
            "Continuations that failed before running (retried), crashed (the run raised) or were refused."
        )
    )
    count_limit = serializers.IntegerField(help_text=_("Where each count stops."))
    capped = serializers.ListField(
        child=serializers.CharField(), help_text=_("The counts that reached count_limit: at least that many.")
    )
    at = serializers.DateTimeField(help_text=_("When the figures were read."))


@extend_schema_serializer(component_name="TurnstateCheckpointRow")
class CheckpointRowSerializer(serializers.ModelSerializer[CheckpointMetadata]):
    """A row without ``value``: values can be megabytes, and a list never needs them."""

    class Meta:
        model = CheckpointMetadata
        fields = CHECKPOINT_LIST_FIELDS
        read_only_fields = fields


@extend_schema_field(
    {
        "type": "string",
        "nullable": True,
        "readOnly": True,
        "description": _(
            "The stored text as written (decrypted); null when it cannot be read (see unreadable)."
        ),
    }
)
class PlainValueField(serializers.Field):  # type: ignore[type-arg]
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, value: Any) -> Any:
        return readable_value(value)[0]


@extend_schema_field(
    {
        "type": "string",
        "nullable": True,
        "readOnly": True,
        "description": _(
            "Why the value cannot be read (its encryption key is not configured); null when it can."
        ),
    }
)
class UnreadableField(serializers.Field):  # type: ignore[type-arg]
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, value: Any) -> Any:
        return readable_value(value)[1]


@extend_schema_serializer(component_name="TurnstateCheckpointDetail")
class CheckpointDetailSerializer(serializers.ModelSerializer[CheckpointMetadata]):
    value = PlainValueField()
    unreadable = UnreadableField()

    class Meta:
        model = CheckpointMetadata
        fields = (*CHECKPOINT_LIST_FIELDS, "value", "unreadable")
        read_only_fields = fields


def readable_value(row: CheckpointMetadata) -> tuple[str | None, str | None]:
    """The row's value as written, or None and why not (never any of the stored value)."""
    try:
        return row.plain_value(), None
    except UnreadableValueError as exc:
        return None, str(exc)


ERROR_CODES = (
    "invalid_token",
    "record_mismatch",
    "not_authenticated",
    "authentication_failed",
    "permission_denied",
    "not_found",
    "method_not_allowed",
    "not_acceptable",
    "unsupported_media_type",
    "parse_error",
    "already_answered",
    "expired",
    "too_large",
    "throttled",
    "bad_request",
    "server_error",
    "unavailable",
)


@extend_schema_field({"type": "string", "enum": list(ERROR_CODES)}, component_name="TurnstateErrorCode")
class ErrorCodeField(serializers.CharField):
    """A stable, machine-readable code; ``detail`` is for people and may change."""


@extend_schema_serializer(component_name="TurnstateError")
class ErrorSerializer(serializers.Serializer[Any]):
    """Every error body except field errors."""

    code = ErrorCodeField()
    detail = serializers.CharField()
