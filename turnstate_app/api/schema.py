"""OpenAPI descriptions of the error bodies, shared by every endpoint's ``extend_schema``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from django.utils.translation import gettext_lazy as _
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse, extend_schema

from turnstate_app.api.serializers import ErrorSerializer

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

FIELD_ERRORS: dict[str, Any] = {
    "type": "object",
    "description": _('Field errors, DRF\'s shape: {"field": ["message", ...]}.'),
    "additionalProperties": {"type": "array", "items": {"type": "string"}},
}

# Registered by the 401/403/503 responses every endpoint documents.
ERROR_OBJECT: dict[str, Any] = {"$ref": "#/components/schemas/TurnstateError"}


_F = TypeVar("_F", bound=Callable[..., Any])

TAGS = ["turnstate"]


def operation(**kwargs: Any) -> Callable[[_F], _F]:
    """``extend_schema`` for one of the app's view methods, tagged ``turnstate``, built on
    drf-spectacular's AutoSchema whatever the host's ``DEFAULT_SCHEMA_CLASS`` says.

    ``extend_schema`` bases a method's schema on ``DEFAULT_SCHEMA_CLASS`` unless the method
    names one in ``kwargs``: DRF's own AutoSchema there breaks schema generation and
    ``check --deploy`` (``drf_spectacular.E001``) for a host that never set it.
    """

    def decorate(view_method: _F) -> _F:
        view_method.kwargs = {**getattr(view_method, "kwargs", {}), "schema": AutoSchema}  # type: ignore[attr-defined]
        decorated: _F = extend_schema(tags=TAGS, **kwargs)(view_method)
        return decorated

    return decorate


def error(description: StrOrPromise) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


def bad_request(description: StrOrPromise) -> OpenApiResponse:
    """A 400 is either field errors or ``{"code", "detail"}``."""
    return OpenApiResponse({"oneOf": [ERROR_OBJECT, FIELD_ERRORS]}, description=description)


NOT_AUTHENTICATED = error(
    _(
        "not_authenticated: no credentials (401 when the project's first authentication class sends a "
        "challenge, else 403)."
    )
)
FORBIDDEN = error(_("permission_denied: authenticated, but not allowed."))
UNAVAILABLE = error(_("unavailable: the database or the encryption keys cannot be reached; retry later."))
BAD_QUERY = bad_request(
    _(
        "An invalid filter, page_size or cursor (field errors); bad_request: a value the database cannot "
        "compare."
    )
)

REFUSED_VALUE = error(
    _("bad_request: the request holds a value the database cannot compare (e.g. a NUL in Basic credentials).")
)

READ_ERRORS: dict[int, OpenApiResponse] = {
    400: REFUSED_VALUE,
    401: NOT_AUTHENTICATED,
    403: FORBIDDEN,
    503: UNAVAILABLE,
}
LIST_ERRORS: dict[int, OpenApiResponse] = {**READ_ERRORS, 400: BAD_QUERY}
DETAIL_ERRORS: dict[int, OpenApiResponse] = {
    **READ_ERRORS,
    404: error(_("not_found: no such row, or not one this user may see.")),
}
RESUME_ERRORS: dict[int, OpenApiResponse] = {
    400: bad_request(
        _(
            "invalid_token: the token is malformed or fails its signature; record_mismatch: the stored "
            "record is another turn's or unreadable; parse_error: the body is not JSON; or field errors "
            "(token or answer missing, the answer too large or not storable); bad_request: a value the "
            "database cannot compare."
        )
    ),
    401: NOT_AUTHENTICATED,
    403: error(_("permission_denied: the pause has an owner, and it is neither this user nor staff.")),
    404: error(_("not_found: nothing is recorded for this pause (never minted here, or purged).")),
    409: error(_("already_answered: the token was already consumed.")),
    410: error(_("expired: the pause is past its age.")),
    413: error(_("too_large: the body is larger than DATA_UPLOAD_MAX_MEMORY_SIZE.")),
    415: error(_("unsupported_media_type: the body must be application/json.")),
    503: UNAVAILABLE,
}
