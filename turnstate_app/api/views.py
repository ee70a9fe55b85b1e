"""Read-only viewsets over the ledger and the store, plus the one write: answering a pause.

Who sees which pause is ``PauseQuerySet.for_user``; who may answer and what answering does
is :func:`~turnstate_app.pauses.resume_pause`. The views only translate HTTP to those calls.
"""

from __future__ import annotations

import builtins
from typing import Any, TypeVar

from django.db.models import Model, QuerySet
from django.http import HttpRequest, HttpResponseBase
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiParameter
from rest_framework import mixins, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import BasePermission
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from turnstate_app.api import schema
from turnstate_app.api.exceptions import (
    KeepsDjangoRequest,
    nul_refusals_as_data_errors,
    turnstate_exception_handler,
)
from turnstate_app.api.filters import CheckpointFilter, PauseFilter
from turnstate_app.api.pagination import CreatedCursorPagination
from turnstate_app.api.parsers import BoundedJSONParser
from turnstate_app.api.permissions import IsAuthenticated, IsStaff
from turnstate_app.api.resume_body import resumed_body, token_and_answer
from turnstate_app.api.serializers import (
    CheckpointDetailSerializer,
    CheckpointRowSerializer,
    PauseSerializer,
    ResumedSerializer,
    ResumeRequestSerializer,
    StatusSerializer,
    UnresumablePauseSerializer,
)
from turnstate_app.errors import CheckpointFieldError
from turnstate_app.models import CheckpointMetadata, Pause, UnresumablePause
from turnstate_app.pause_rows import with_request
from turnstate_app.pauses import resume_pause
from turnstate_app.status import lifecycle_status

_M = TypeVar("_M", bound=Model)

BIGINT_MAX = 2**63 - 1


class TurnstateResponses(KeepsDjangoRequest):
    """What every view of the app shares, whatever the host's ``REST_FRAMEWORK`` says: JSON out
    (no HTML error pages), its own error mapping, reads only unless a view says otherwise.
    Authentication and throttling stay the host's. Put before DRF's view class."""

    renderer_classes = [JSONRenderer]
    http_method_names = ["get", "head"]

    def get_exception_handler(self) -> Any:
        return turnstate_exception_handler

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        # The host's authentication runs in here too: a NUL it sends to the database is a
        # 400 on every driver (psycopg2 refuses one with a bare ValueError).
        with nul_refusals_as_data_errors():
            return super().dispatch(request, *args, **kwargs)


class TurnstateViewSet(TurnstateResponses, viewsets.GenericViewSet[_M]):
    """The app's viewsets: its responses (:class:`TurnstateResponses`), JSON in, cursor pages, and
    drf-spectacular's schema class, so a host need not set ``DEFAULT_SCHEMA_CLASS`` for the
    app's schema (or ``check --deploy``) to work."""

    schema = AutoSchema()
    parser_classes = [BoundedJSONParser]
    pagination_class = CreatedCursorPagination
    filter_backends = [DjangoFilterBackend]


class PauseViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TurnstateViewSet[Pause]):
    serializer_class = PauseSerializer
    filterset_class = PauseFilter
    lookup_field = "jti"
    # No control characters (NUL, newline...), at most 255 characters: anything else is no
    # route, so a JSON 404 for every method before any query.
    lookup_value_regex = r"[^/\x00-\x1f\x7f]{1,255}"
    http_method_names = ["get", "head", "post"]

    def get_queryset(self) -> QuerySet[Pause]:
        now = timezone.now()
        return with_request(
            Pause.objects.for_user(self.request.user).with_effective_status(now).with_group_state(now)
        )

    @schema.operation(
        operation_id="turnstate_pauses_list",
        summary=_("Pauses this user may see"),
        description=_("Staff see every pause; other users their own. Ordered by created_at, then id."),
        responses={200: PauseSerializer, **schema.LIST_ERRORS},
    )
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    @schema.operation(
        operation_id="turnstate_pauses_retrieve",
        summary=_("One pause with its question (no transcript)"),
        description=_(
            "`request` is the question the pause asks, as stored at mint; never the transcript. "
            "`answer_schema` is the JSON Schema an answer must meet (null: any answer). "
            "Another user's pause is a 404, so its existence does not leak."
        ),
        responses={200: PauseSerializer, **schema.DETAIL_ERRORS},
    )
    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().retrieve(request, *args, **kwargs)

    def get_permissions(self) -> builtins.list[BasePermission]:  # `list` is the view's action here
        # By route, not by action: a verb the route lacks is refused to non-staff as a 403 too.
        staff_only = "unresumable" in getattr(self, "action_map", {}).values()
        return [IsStaff()] if staff_only else [IsAuthenticated()]

    @schema.operation(
        operation_id="turnstate_pauses_resume",
        summary=_("Answer a pause"),
        description=_(
            "Consumes the token exactly once. An owned pause may be answered by its owner or staff, "
            "an unowned one by any authenticated holder of the token. `resumable` in the response "
            "says whether this resume found a turn state to continue the run from."
        ),
        request=ResumeRequestSerializer,
        responses={200: ResumedSerializer, **schema.RESUME_ERRORS},
    )
    @action(detail=False, methods=["post"], url_path="resume")
    def resume(self, request: Request) -> Response:
        token, answer = token_and_answer(request.data)
        try:
            resumed = resume_pause(token, answer, user=request.user)
        except CheckpointFieldError as exc:  # the lifecycle checks one value: the answer
            raise ValidationError({"answer": [exc.problem]}) from exc
        return Response(resumed_body(resumed))

    @schema.operation(
        operation_id="turnstate_pauses_unresumable",
        summary=_("Pauses this store cannot continue (staff)"),
        description=_("The same rows as the admin's unresumable pauses page."),
        filters=False,
        responses={200: UnresumablePauseSerializer(many=True), **schema.LIST_ERRORS},
    )
    @action(detail=False, methods=["get"], url_path="unresumable")
    def unresumable(self, request: Request) -> Response:
        pages = CreatedCursorPagination()
        page = pages.paginate_queryset(UnresumablePause.objects.all(), request, view=self)
        return pages.get_paginated_response(UnresumablePauseSerializer(page, many=True).data)


class CheckpointViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, TurnstateViewSet[CheckpointMetadata]
):
    permission_classes = [IsStaff]
    filterset_class = CheckpointFilter
    lookup_value_regex = "[0-9]{1,19}"

    def get_queryset(self) -> QuerySet[CheckpointMetadata]:
        rows = CheckpointMetadata.objects.all()
        return rows.defer("value") if self.action == "list" else rows

    @schema.operation(
        operation_id="turnstate_checkpoints_list",
        summary=_("Checkpoint rows, without values (staff)"),
        responses={200: CheckpointRowSerializer, **schema.LIST_ERRORS},
    )
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    @schema.operation(
        operation_id="turnstate_checkpoints_retrieve",
        summary=_("One checkpoint row, with its value (staff)"),
        parameters=[OpenApiParameter("id", int, OpenApiParameter.PATH, description=_("The row's id."))],
        responses={200: CheckpointDetailSerializer, **schema.DETAIL_ERRORS},
    )
    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().retrieve(request, *args, **kwargs)

    def get_serializer_class(self) -> type[BaseSerializer[CheckpointMetadata]]:
        return CheckpointRowSerializer if self.action == "list" else CheckpointDetailSerializer

    def get_object(self) -> CheckpointMetadata:
        if int(self.kwargs[self.lookup_field]) > BIGINT_MAX:
            raise NotFound()
        return super().get_object()


class StatusView(TurnstateResponses):
    """``GET status/``: the figures of ``turnstate_status``, for staff (dashboards, probes); the
    app's responses and its schema class (set below the method, whose decorator names the
    ``schema`` module)."""

    permission_classes = [IsStaff]

    @schema.operation(
        operation_id="turnstate_status",
        summary=_("Where the lifecycle stands (staff)"),
        description=_(
            "Pending pauses and the age of the oldest, answers awaiting hand-off, stalled and failed "
            "continuations, unresumable pauses, failed groups: the figures of `manage.py "
            "turnstate_status`, each one bounded query."
        ),
        responses={200: StatusSerializer, **schema.READ_ERRORS},
    )
    def get(self, request: Request) -> Response:
        return Response(StatusSerializer(lifecycle_status().as_dict()).data)

    schema = AutoSchema()


class UnknownPathView(KeepsDjangoRequest):
    """Any other path under the app's prefix: a JSON 404 for every method, never Django's HTML page.

    Also where ids the routes refuse end up (NUL bytes, more than 255 characters).
    """

    renderer_classes = [JSONRenderer]
    authentication_classes: list[Any] = []
    permission_classes: list[Any] = []
    schema = None

    def get_exception_handler(self) -> Any:
        return turnstate_exception_handler

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        raise NotFound("No such endpoint. The app's paths end with a slash: pauses/, checkpoints/, status/.")
