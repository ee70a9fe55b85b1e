"""Bad input is a 4xx JSON body that writes nothing; a down database is a JSON 503; bugs a JSON 500."""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from django.core.exceptions import DisallowedHost, PermissionDenied, RequestDataTooBig
from django.db import DataError, InterfaceError, OperationalError, connections
from django.test import Client
from rest_framework import views
from rest_framework.authentication import BasicAuthentication
from rest_framework.renderers import BrowsableAPIRenderer
from rest_framework.settings import api_settings
from rest_framework.test import APIClient

from tests.api_support import (
    API,
    CHECKPOINTS,
    PAUSES,
    RESUME,
    UNRESUMABLE,
    checkpoint_url,
    client_for,
    pause_url,
    snapshot,
)
from tests.factories import PauseFactory
from tests.pause_helpers import mint
from turnstate_app.api import parsers
from turnstate_app.api.exceptions import nul_refused_as_data_error, turnstate_exception_handler
from turnstate_app.api.views import CheckpointViewSet, PauseViewSet
from turnstate_app.errors import (
    CheckpointFieldError,
    PauseAlreadyAnsweredError,
    PauseCheckpointNotFoundError,
    PauseExpiredError,
    PayloadBindingError,
    TokenSignatureError,
)
from turnstate_app.models import Pause

pytestmark = pytest.mark.django_db


def assert_json_error(response: Any, status: int, code: str | None = None, field: str | None = None) -> None:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    body = response.json()
    if code is not None:
        assert body["code"] == code and body["detail"]
    if field is not None:
        assert isinstance(body[field], list) and body[field]


# -- bodies -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content_type", "data"),
    [
        ("text/plain", "token=x"),
        ("application/x-www-form-urlencoded", "token=x&answer=y"),
        (
            "multipart/form-data; boundary=XX",
            "--XX\r\nContent-Disposition: form-data; name=token\r\n\r\nx\r\n--XX--",
        ),
        ("application/xml", "<token>x</token>"),
    ],
)
def test_a_body_that_is_not_json_is_415(users: dict[str, Any], content_type: str, data: str) -> None:
    mint()
    before = snapshot()
    response = client_for(users["owner"]).post(RESUME, data, content_type=content_type)
    assert_json_error(response, 415, "unsupported_media_type")
    assert snapshot() == before


@pytest.mark.parametrize(
    "raw",
    [
        b"{not json",
        b'{"token": "x", "answer": NaN}',
        b'{"token": "x", "answer": Infinity}',
        b"\xff\xfe\x00garbage",
        b'{"token": "x", "answer": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b'{"token": "x", "answer": ' + b"[" * 150 + b"]" * 150 + b"}",
    ],
    ids=["broken", "nan", "infinity", "bytes", "nested-100k", "nested-150"],
)
def test_a_body_that_does_not_parse_is_400(users: dict[str, Any], raw: bytes) -> None:
    mint()
    before = snapshot()
    response = client_for(users["owner"]).post(RESUME, raw, content_type="application/json")
    assert_json_error(response, 400, "parse_error")
    assert snapshot() == before


def test_nesting_within_the_limit_is_accepted(users: dict[str, Any]) -> None:
    minted = mint()
    depth = parsers.MAX_JSON_DEPTH - 1  # the body object itself is one level
    answer: Any = "deep"
    for _ in range(depth - 1):
        answer = [answer]
    raw = json.dumps({"token": minted.token, "answer": answer})
    response = client_for(users["owner"]).post(RESUME, raw, content_type="application/json")
    assert response.status_code == 200, response.content


def test_an_unknown_charset_is_400(users: dict[str, Any]) -> None:
    response = client_for(users["owner"]).post(
        RESUME, b"{}", content_type="application/json; charset=bz2_codec"
    )
    assert_json_error(response, 400, "parse_error")


def test_an_empty_body_is_field_errors(users: dict[str, Any]) -> None:
    response = client_for(users["owner"]).post(RESUME, b"", content_type="application/json")
    assert_json_error(response, 400, field="token")


def test_a_body_over_the_upload_limit_is_413(users: dict[str, Any], settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    minted = mint()
    before = snapshot()
    body = json.dumps({"token": minted.token, "answer": "x" * 2048})
    response = client_for(users["owner"]).post(RESUME, body, content_type="application/json")
    assert_json_error(response, 413, "too_large")
    assert snapshot() == before


def test_a_1mb_token_is_invalid_token(users: dict[str, Any]) -> None:
    mint()
    before = snapshot()
    response = client_for(users["owner"]).post(RESUME, {"token": "x" * 1_000_000, "answer": 1}, format="json")
    assert_json_error(response, 400, "invalid_token")
    assert snapshot() == before


def test_only_json_is_rendered_even_when_html_is_asked_for(staff: APIClient) -> None:
    response = staff.get(PAUSES, HTTP_ACCEPT="text/html")
    assert_json_error(response, 406, "not_acceptable")
    assert staff.get(PAUSES, HTTP_ACCEPT="text/html,*/*;q=0.8").status_code == 200


# -- ids in paths -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        pause_url("a%00b"),
        pause_url("%00"),
        pause_url("j" * 256),
        checkpoint_url("a%00b"),
        checkpoint_url("9" * 20),
        checkpoint_url("9" * 400),
        checkpoint_url("-1"),
        checkpoint_url("1.0"),
        checkpoint_url("١"),  # a digit, but not an ASCII one
        checkpoint_url("abc"),
        f"{API}pauses",  # no trailing slash: no redirect, a JSON 404
        f"{API}checkpoints",
        f"{PAUSES}x/y/z/",
        f"{PAUSES}%00/",
        f"{API}pauses%00",
        pause_url("a%0Ab"),  # a control character: no route, like NUL
        pause_url("%0A"),
        pause_url("a%7Fb"),
    ],
)
def test_bad_ids_and_unknown_paths_are_json_404s(staff: APIClient, path: str) -> None:
    PauseFactory.create()
    for method in ("get", "post", "delete"):
        response = getattr(staff, method)(path)
        assert_json_error(response, 404, "not_found")


@pytest.mark.parametrize(
    "path",
    [
        pause_url("j" * 255),
        pause_url("スレッド-😀"),
        pause_url("a%ZZb"),
        pause_url("%E2%80%AE"),
        checkpoint_url("9" * 19),  # beyond a 64-bit id
        checkpoint_url("0"),
    ],
)
def test_ids_the_routes_accept_but_nothing_has_are_404s(staff: APIClient, path: str) -> None:
    assert_json_error(staff.get(path), 404, "not_found")
    assert_json_error(staff.delete(path), 405, "method_not_allowed")


# -- query strings ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "field"),
    [
        (f"{PAUSES}?thread_id=a%00b", "thread_id"),
        (f"{PAUSES}?run_id=%00", "run_id"),
        (f"{PAUSES}?session_id=" + "s" * 256, "session_id"),
        (f"{PAUSES}?status=bogus", "status"),
        (f"{PAUSES}?status=PENDING", "status"),
        (f"{PAUSES}?status=%00", "status"),
        (f"{PAUSES}?resumable=maybe", "resumable"),
        (f"{PAUSES}?resumable=1", "resumable"),
        (f"{CHECKPOINTS}?key_prefix=ask%00", "key_prefix"),
        (f"{CHECKPOINTS}?key_prefix=" + "k" * 256, "key_prefix"),
        (f"{CHECKPOINTS}?checkpoint_id=%00", "checkpoint_id"),
        *[
            (f"{base}?page_size={size}", "page_size")
            for base in (PAUSES, CHECKPOINTS, UNRESUMABLE)
            for size in ("", "-1", "0", "201", "10" + "0" * 30, "abc", "1.5", "%00", "%D9%A1", "+5", "%205")
        ],
    ],
)
def test_bad_query_parameters_are_field_errors(staff: APIClient, url: str, field: str) -> None:
    PauseFactory.create()
    assert_json_error(staff.get(url), 400, field=field)


def cursor(raw: str) -> str:
    """A cursor as DRF writes one: a base64 query string."""
    return base64.b64encode(raw.encode()).decode()


def position(value: str) -> str:
    return cursor(urlencode({"p": value}))


@pytest.mark.parametrize(
    "value",
    [
        "garbage",
        "%00",
        "é",
        cursor("p=2025-01-01 00:00:00+00:00")[:-3] + "!!!",  # not base64
        position("not-a-date"),
        position("2025-13-45 99:99:99+00:00"),
        position("2025-01-01 00:00:00"),  # no time zone
        position("0001-01-01 00:00:00+01:00"),  # before year 1 in UTC
        position("9999-12-31 23:59:59-01:00"),  # after year 9999 in UTC
        position("\x00"),
        position("2025-01-01 00:00:00+00:00' OR 1=1 --"),
        cursor("o=-1"),
        cursor("o=x"),
        cursor("o=99999999999999999999"),
        cursor("r=x"),
        cursor("r=2"),
        cursor("p=a&p=b"),
        cursor("x=1"),
    ],
)
def test_forged_cursors_are_field_errors(staff: APIClient, value: str) -> None:
    PauseFactory.create()
    for base in (PAUSES, CHECKPOINTS, UNRESUMABLE):
        assert_json_error(staff.get(f"{base}?cursor={value}"), 400, field="cursor")


def test_a_well_formed_cursor_at_the_edge_of_time_is_an_empty_page(staff: APIClient) -> None:
    PauseFactory.create()
    for edge in ("9999-12-31 23:59:59.999999+00:00", "0001-01-01 00:00:00+00:00"):
        for base in (PAUSES, CHECKPOINTS, UNRESUMABLE):
            response = staff.get(base, {"cursor": position(edge)})
            assert response.status_code == 200, response.content


@pytest.mark.parametrize("username", ["a\x00b", "\x00", "u" * 300])
@pytest.mark.parametrize(
    "path", [PAUSES, pause_url("j"), CHECKPOINTS, checkpoint_url(1), UNRESUMABLE, RESUME]
)
def test_basic_credentials_the_database_cannot_compare_are_refused_not_a_500(
    username: str, path: str
) -> None:
    credentials = base64.b64encode(f"{username}:pw".encode()).decode()
    client = APIClient()
    for method in ("get", "post"):
        response = getattr(client, method)(path, HTTP_AUTHORIZATION=f"Basic {credentials}")
        assert response.status_code in (400, 401, 403, 405), response.content
        assert response["Content-Type"] == "application/json"


def refused_like_psycopg2(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
    """psycopg2's refusal of a NUL in a parameter, on any database: a bare ValueError, nothing sent."""
    if any(isinstance(value, str) and "\x00" in value for value in params or ()):
        raise ValueError("A string literal cannot contain NUL (0x00) characters.")
    return execute(sql, params, many, context)


def failing_with_a_bug(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
    raise ValueError("a bug")


def host_authentication_under(driver: Any) -> type[BasicAuthentication]:
    """The host's Basic authentication, its user lookup run on ``driver`` (an ``execute_wrapper``)."""

    class Authentication(BasicAuthentication):
        def authenticate_credentials(self, userid: str, password: str, request: Any = None) -> Any:
            with connections["default"].execute_wrapper(driver):
                return super().authenticate_credentials(userid, password, request)

    return Authentication


@pytest.mark.parametrize("path", [PAUSES, CHECKPOINTS, RESUME])
def test_a_nul_the_driver_refuses_with_a_value_error_is_a_400_on_every_driver(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """psycopg2 raises ValueError where psycopg 3 raises what Django calls DataError: the same 400."""
    for viewset in (PauseViewSet, CheckpointViewSet):
        monkeypatch.setattr(
            viewset, "authentication_classes", [host_authentication_under(refused_like_psycopg2)]
        )
    credentials = base64.b64encode(b"a\x00b:pw").decode()
    for method in ("get", "post"):
        response = getattr(APIClient(), method)(path, HTTP_AUTHORIZATION=f"Basic {credentials}")
        assert_json_error(response, 400, "bad_request")
    assert connections["default"].execute_wrappers == []  # the view's own is gone with the request


def test_a_value_error_that_is_not_a_nul_refusal_stays_a_json_500(
    users: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        PauseViewSet, "authentication_classes", [host_authentication_under(failing_with_a_bug)]
    )
    client = APIClient(raise_request_exception=False)
    response = client.get(PAUSES, HTTP_AUTHORIZATION=f"Basic {base64.b64encode(b'owner:pw').decode()}")
    assert_json_error(response, 500, "server_error")


@pytest.mark.parametrize(
    ("params", "translated"),
    [
        (["a\x00b"], True),
        ({"name": "\x00"}, True),
        ([("a",), ("b\x00",)], True),  # executemany
        (["ab", 1, None, b"\x00"], False),  # bytes are bytea: NUL is fine there
        (None, False),
    ],
)
def test_only_a_value_error_for_a_nul_in_the_parameters_becomes_a_data_error(
    params: Any, translated: bool
) -> None:
    def driver(sql: str, params: Any, many: bool, context: Any) -> Any:
        raise ValueError("refused")

    expected: type[Exception] = DataError if translated else ValueError
    with pytest.raises(expected, match="refused"):
        nul_refused_as_data_error(driver, "SELECT %s", params, False, {})


def test_unicode_and_unknown_query_parameters_are_harmless(staff: APIClient) -> None:
    PauseFactory.create(thread_id="t")
    response = staff.get(PAUSES, {"thread_id": "t", "😀": "é", "ordering": "-jti"})
    assert response.status_code == 200 and len(response.json()["results"]) == 1


# -- the database and bugs ----------------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
def database_down() -> Iterator[None]:
    """The default connection points at nothing: a closed port (or an unopenable SQLite file)."""
    wrapper = connections["default"]  # the wrapper itself: monkeypatch would go through the proxy
    original = wrapper.settings_dict
    broken = dict(original)
    if wrapper.vendor == "sqlite":
        broken["NAME"] = "/nonexistent-directory/turnstate.sqlite3"
    else:
        broken["HOST"], broken["PORT"] = "127.0.0.1", closed_port()
        broken["OPTIONS"] = {**broken.get("OPTIONS", {}), "connect_timeout": 2}
    wrapper.close()
    wrapper.settings_dict = broken
    try:
        yield
    finally:
        wrapper.close()
        wrapper.settings_dict = original


@pytest.mark.skipif(
    bool(connections["default"].settings_dict["OPTIONS"].get("pool")),
    reason="the test points the connection at a closed port; a pool keeps its open connections",
)
@pytest.mark.django_db(transaction=True)
def test_an_unreachable_database_is_a_json_503(users: dict[str, Any], request: pytest.FixtureRequest) -> None:
    minted = mint(owner=users["owner"])
    staff = APIClient()
    staff.force_authenticate(users["staff"])  # the user is in hand: the first query is the view's
    session = client_for(users["owner"])
    request.getfixturevalue("database_down")
    for client, method, url, data in [
        (staff, "get", PAUSES, None),
        (staff, "get", pause_url(minted.claims.jti), None),
        (staff, "get", UNRESUMABLE, None),
        (staff, "get", CHECKPOINTS, None),
        (staff, "post", RESUME, {"token": minted.token, "answer": "x"}),
        (session, "get", PAUSES, None),  # the session lookup itself fails
    ]:
        response = getattr(client, method)(url, data, format="json")
        assert_json_error(response, 503, "unavailable")


def test_a_dropped_connection_is_a_json_503(users: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    def dropped(*args: Any, **kwargs: Any) -> Any:
        raise InterfaceError("connection already closed")

    minted = mint()
    monkeypatch.setattr("turnstate_app.api.views.resume_pause", dropped)
    response = client_for(users["owner"]).post(RESUME, {"token": minted.token, "answer": 1}, format="json")
    assert_json_error(response, 503, "unavailable")


def test_a_bug_is_a_logged_json_500(
    users: dict[str, Any], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr("turnstate_app.api.views.resume_pause", broken)
    client = APIClient(raise_request_exception=False)
    client.force_login(users["owner"])
    response = client.post(RESUME, {"token": "t", "answer": 1}, format="json")
    assert_json_error(response, 500, "server_error")
    assert "a bug" not in response.content.decode()
    [record] = [r for r in caplog.records if r.name == "django.request" and r.levelname == "ERROR"]
    # The log names the failure by its class and frames, never its message (it may quote an answer).
    # (The frames quote source lines, so the test's own ``raise RuntimeError("a bug")`` shows there.)
    assert record.exc_info is None and "RuntimeError: a bug" not in record.getMessage()
    assert "RuntimeError (message withheld" in record.getMessage() and "in broken" in record.getMessage()
    # The test client (and error trackers) still hear about it through the signal.
    raising = client_for(users["owner"])
    with pytest.raises(RuntimeError, match="a bug"):
        raising.post(RESUME, {"token": "t", "answer": 1}, format="json")


def test_the_host_projects_drf_settings_are_untouched() -> None:
    assert api_settings.EXCEPTION_HANDLER is views.exception_handler
    renderers: list[Any] = list(api_settings.DEFAULT_RENDERER_CLASSES)
    assert BrowsableAPIRenderer in renderers  # the host's own views keep the browsable API


def test_no_request_that_is_refused_writes(users: dict[str, Any]) -> None:
    """A sweep: every refused request against a pending pause leaves the database as it was."""
    minted = mint(owner=users["owner"])
    before = snapshot()
    other = client_for(users["other"])
    for response in (
        other.post(RESUME, {"token": minted.token, "answer": 1}, format="json"),
        other.delete(pause_url(minted.claims.jti)),
        other.put(pause_url(minted.claims.jti), {"status": "answered"}, format="json"),
        Client().post(RESUME, {"token": minted.token, "answer": 1}, content_type="application/json"),
        client_for(users["staff"]).patch(pause_url(minted.claims.jti), {"status": "answered"}, format="json"),
    ):
        assert 400 <= response.status_code < 500
        assert response["Content-Type"] == "application/json"
    assert snapshot() == before
    assert Pause.objects.get().status == "pending"


@pytest.mark.parametrize(
    ("exc", "status", "body"),
    [
        (TokenSignatureError("bad"), 400, {"code": "invalid_token"}),
        (PayloadBindingError("tampered?"), 400, {"code": "record_mismatch"}),
        (PauseCheckpointNotFoundError("x"), 404, {"code": "not_found"}),
        (PauseAlreadyAnsweredError("x"), 409, {"code": "already_answered"}),
        (PauseExpiredError("x"), 410, {"code": "expired"}),
        (PermissionDenied("only the owner"), 403, {"code": "permission_denied"}),
        (OperationalError("server closed the connection"), 503, {"code": "unavailable"}),
        (InterfaceError("connection already closed"), 503, {"code": "unavailable"}),
        (RequestDataTooBig("big"), 413, {"code": "too_large"}),
        (DisallowedHost("evil.example"), 400, {"code": "bad_request"}),
        (DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes"), 400, {"code": "bad_request"}),
        (
            CheckpointFieldError("thread_id", "is 300 characters long"),
            400,
            {"thread_id": ["is 300 characters long"]},
        ),
    ],
)
def test_the_exception_mapping(exc: Exception, status: int, body: dict[str, Any]) -> None:
    response = turnstate_exception_handler(exc, {"request": None, "view": None})
    assert response.status_code == status
    assert body.items() <= response.data.items()
    assert "tamper" not in json.dumps(response.data)
    assert issubclass(TokenSignatureError, PayloadBindingError)  # callers still catch the parent
