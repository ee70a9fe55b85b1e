"""Every error the app's views meet, as a JSON body with a stable ``code``.

Installed per view (``get_exception_handler``), never in ``REST_FRAMEWORK``, so the host
project's own handler and its other views are untouched. Field errors keep DRF's shape
(``{"field": ["message"]}``); everything else is ``{"code": ..., "detail": ...}``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.core.signals import got_request_exception
from django.db import DataError, InterfaceError, OperationalError, connections
from django.http import HttpRequest
from django.utils.log import log_response
from rest_framework import status
from rest_framework.exceptions import ErrorDetail, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView, set_rollback
from rest_framework.views import exception_handler as drf_exception_handler

from turnstate_app.errors import (
    AnswerValidationError,
    CheckpointFieldError,
    KeyRingError,
    PauseAlreadyAnsweredError,
    PauseCheckpointNotFoundError,
    PauseExpiredError,
    PayloadBindingError,
    TokenSignatureError,
    TurnStateError,
)
from turnstate_app.telemetry import described

# Most specific first: a TokenSignatureError is also a PayloadBindingError. The texts are
# fixed, never the exception's own message: a person must not read "tampered" for a record
# that is merely another turn's, and internals (jti, thread) stay in the logs.
LIFECYCLE_ERRORS: tuple[tuple[type[TurnStateError], int, str, str], ...] = (
    (
        TokenSignatureError,
        status.HTTP_400_BAD_REQUEST,
        "invalid_token",
        "The token is not a valid pause token: it is malformed, truncated, or was not issued here.",
    ),
    (
        PayloadBindingError,
        status.HTTP_400_BAD_REQUEST,
        "record_mismatch",
        "The record stored for this pause belongs to another turn or cannot be read.",
    ),
    (
        PauseCheckpointNotFoundError,
        status.HTTP_404_NOT_FOUND,
        "not_found",
        "Nothing is recorded for this pause.",
    ),
    (
        PauseAlreadyAnsweredError,
        status.HTTP_409_CONFLICT,
        "already_answered",
        "This pause has already been answered.",
    ),
    (
        PauseExpiredError,
        status.HTTP_410_GONE,
        "expired",
        "This pause has expired and can no longer be answered.",
    ),
)

UNAVAILABLE = "The database cannot be reached; try again shortly."
KEYS_UNAVAILABLE = "The encryption keys of the stored values cannot be had; try again shortly."


def error_body(code: str, detail: str) -> dict[str, str]:
    return {"code": code, "detail": detail}


def turnstate_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    """Map ``exc`` to a JSON response; an unexpected error is logged and becomes a JSON 500."""
    if isinstance(exc, CheckpointFieldError):
        exc = ValidationError({exc.field: [exc.problem]})
    elif isinstance(exc, AnswerValidationError):  # the pause stays pending: the person answers again
        exc = ValidationError({"answer": exc.messages})
    response = _known(exc, context)
    if response is None:
        response = _unexpected(exc, context)
    if not isinstance(exc, PauseExpiredError):
        # An expired pause was marked so by this request, and that mark is a fact worth
        # keeping under ATOMIC_REQUESTS; every other error leaves the database as it was.
        set_rollback()
    return response


def _known(exc: Exception, context: dict[str, Any]) -> Response | None:
    for error_class, status_code, code, detail in LIFECYCLE_ERRORS:
        if isinstance(exc, error_class):
            return Response(error_body(code, detail), status=status_code)
    if isinstance(exc, KeyRingError):
        response = Response(
            error_body("unavailable", KEYS_UNAVAILABLE), status=status.HTTP_503_SERVICE_UNAVAILABLE
        )
        # With the traceback: the ring's own failure is chained to it, for the operator to fix.
        _log(response, context, exc, "Service Unavailable (encryption keys): %s")
        return response
    if isinstance(exc, OperationalError | InterfaceError):
        response = Response(
            error_body("unavailable", UNAVAILABLE), status=status.HTTP_503_SERVICE_UNAVAILABLE
        )
        # With the traceback: a missing table is an OperationalError too, and must be seen.
        _log(response, context, exc, "Service Unavailable (database): %s")
        return response
    if isinstance(exc, DataError):
        # Input the database refuses to compare or store (a NUL on PostgreSQL, say, in Basic
        # credentials the host's authentication looks up): the client's, not a bug of ours.
        response = Response(
            error_body("bad_request", "The request holds a value the database cannot compare or store."),
            status=status.HTTP_400_BAD_REQUEST,
        )
        _log(response, context, exc, "Bad Request (database refused a value): %s")
        return response
    if isinstance(exc, RequestDataTooBig):
        return Response(
            error_body("too_large", "The request body is larger than this server accepts."),
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, SuspiciousOperation):
        logging.getLogger(f"django.security.{type(exc).__name__}").error(str(exc))
        return Response(
            error_body("bad_request", "The request is malformed."), status=status.HTTP_400_BAD_REQUEST
        )
    handled: Response | None = drf_exception_handler(exc, context)
    if handled is not None and isinstance(handled.data, dict) and "detail" in handled.data:
        detail = handled.data["detail"]
        handled.data["code"] = detail.code if isinstance(detail, ErrorDetail) else "error"
    return handled


@contextmanager
def nul_refusals_as_data_errors() -> Iterator[None]:
    """While a view runs, a NUL the database driver refuses is Django's ``DataError``, whatever the driver.

    PostgreSQL cannot hold NUL in text. psycopg 3 refuses such a parameter with an error Django
    translates to ``DataError`` (a 400 below); psycopg2 refuses it with a bare ``ValueError``
    before sending the statement, which would be a 500. The app refuses NUL in its own input
    before any query, but the host's authentication looks up what the client sent (a NUL in
    Basic credentials, say). Installed with ``execute_wrapper`` on every connection, so only
    a statement's own execution is watched, and only a ``ValueError`` for parameters that hold
    a NUL is translated: any other ``ValueError`` stays the bug it is.
    """
    with ExitStack() as stack:
        for connection in connections.all():
            stack.enter_context(connection.execute_wrapper(nul_refused_as_data_error))
        yield


def nul_refused_as_data_error(
    execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict[str, Any]
) -> Any:
    """An ``execute_wrapper``: the driver's ``ValueError`` for a NUL in ``params`` as ``DataError``."""
    try:
        return execute(sql, params, many, context)
    except ValueError as exc:
        if not holds_nul(params):
            raise
        raise DataError(str(exc)) from exc


def holds_nul(params: Any) -> bool:
    """Whether a statement's parameters (a sequence, a mapping, or many of them) hold a str with NUL."""
    if isinstance(params, str):
        return "\x00" in params
    if isinstance(params, dict):
        return any(holds_nul(value) for value in params.values())
    if isinstance(params, list | tuple):
        return any(holds_nul(value) for value in params)
    return False


def _unexpected(exc: Exception, context: dict[str, Any]) -> Response:
    """A bug, not bad input: JSON for the client, the traceback for the logs and error trackers."""
    response = Response(
        error_body("server_error", "The server failed to handle this request."),
        status=status.HTTP_500_INTERNAL_SERVER_ERROR,
    )
    # What Django does for an uncaught exception: the signal (error trackers and the test
    # client listen to it), then the django.request log with the traceback.
    got_request_exception.send(sender=None, request=_request_of(context))
    _log(response, context, exc, "Internal Server Error: %s")
    return response


class KeepsDjangoRequest(APIView):
    """A view that keeps the ``HttpRequest`` it was called with, for the error handler.

    Log handlers (``AdminEmailHandler``'s report) and error trackers read a request's POST
    data. DRF's ``Request`` answers that by parsing the body, which raises for a malformed
    body nobody parsed yet, so the report of a 503 or 500 would itself fail. Django's
    ``HttpRequest`` reads as Django's handler would have: DRF hands it to
    ``initialize_request``, its documented hook, and nothing private is reached for.
    """

    django_request: HttpRequest | None = None

    def initialize_request(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Request:
        self.django_request = request
        return super().initialize_request(request, *args, **kwargs)


def _request_of(context: dict[str, Any]) -> Any:
    """The view's ``HttpRequest`` where it kept one, else the ``Request`` DRF put in ``context``."""
    kept = getattr(context.get("view"), "django_request", None)
    return kept if kept is not None else context.get("request")


def _log(response: Response, context: dict[str, Any], exc: Exception, message: str) -> None:
    """Log once on django.request (Django then skips its own line for this response): the
    failure by its class and frames, never its message, which may quote a value of the request
    (a database's refusal quotes the text it refused)."""
    request = _request_of(context)
    path = getattr(request, "path", "?")
    # In the format, not an argument: Django escapes arguments' newlines, and these lines hold
    # only code and a class name, nothing of the request.
    traceback = described(exc).replace("%", "%%")
    log_response(f"{message}\n{traceback}", path, response=response, request=request)
