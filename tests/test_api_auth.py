"""Who may call what: anonymous, owner, another user and staff, on every endpoint and verb."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.authentication import BasicAuthentication, SessionAuthentication

from tests.api_support import (
    CHECKPOINTS,
    PAUSES,
    RESUME,
    UNRESUMABLE,
    checkpoint_url,
    client_for,
    pause_url,
    request_row,
)
from tests.pause_helpers import mint
from turnstate_app.api.views import PauseViewSet
from turnstate_app.models import Pause

pytestmark = pytest.mark.django_db

WHO = ("anonymous", "owner", "other", "staff")
VERBS = ("get", "head", "post", "put", "patch", "delete", "options")

# endpoint -> verb -> status for (anonymous, owner, other, staff). The resume POST is
# sent with a valid token of the owner's pause. With DRF's default authentication
# (session first) an anonymous caller gets 403; see the 401 test below.
NOT_ALLOWED = (403, 405, 405, 405)
STAFF_ONLY = (403, 403, 403, 200)
STAFF_ONLY_NOT_ALLOWED = (403, 403, 403, 405)
MATRIX: dict[str, dict[str, tuple[int, int, int, int]]] = {
    "pauses/": {
        **dict.fromkeys(("get", "head"), (403, 200, 200, 200)),
        **dict.fromkeys(("post", "put", "patch", "delete", "options"), NOT_ALLOWED),
    },
    "pauses/<jti>/": {
        **dict.fromkeys(("get", "head"), (403, 200, 404, 200)),
        **dict.fromkeys(("post", "put", "patch", "delete", "options"), NOT_ALLOWED),
    },
    "pauses/resume/": {
        "post": (403, 200, 403, 200),
        **dict.fromkeys(("get", "head", "put", "patch", "delete", "options"), NOT_ALLOWED),
    },
    "pauses/unresumable/": {
        **dict.fromkeys(("get", "head"), STAFF_ONLY),
        **dict.fromkeys(("post", "put", "patch", "delete", "options"), STAFF_ONLY_NOT_ALLOWED),
    },
    "checkpoints/": {
        **dict.fromkeys(("get", "head"), STAFF_ONLY),
        **dict.fromkeys(("post", "put", "patch", "delete", "options"), STAFF_ONLY_NOT_ALLOWED),
    },
    "checkpoints/<id>/": {
        **dict.fromkeys(("get", "head"), STAFF_ONLY),
        **dict.fromkeys(("post", "put", "patch", "delete", "options"), STAFF_ONLY_NOT_ALLOWED),
    },
}

CASES = [
    (endpoint, verb, who, statuses[WHO.index(who)])
    for endpoint, verbs in MATRIX.items()
    for verb, statuses in verbs.items()
    for who in WHO
]


def test_the_matrix_covers_every_endpoint_verb_and_caller() -> None:
    assert all(set(verbs) == set(VERBS) for verbs in MATRIX.values())
    assert len(CASES) == len(MATRIX) * len(VERBS) * len(WHO)


@pytest.mark.parametrize(("endpoint", "verb", "who", "expected"), CASES)
def test_authorization_matrix(
    users: dict[str, Any], endpoint: str, verb: str, who: str, expected: int
) -> None:
    minted = mint(owner=users["owner"])
    url = {
        "pauses/": PAUSES,
        "pauses/<jti>/": pause_url(minted.claims.jti),
        "pauses/resume/": RESUME,
        "pauses/unresumable/": UNRESUMABLE,
        "checkpoints/": CHECKPOINTS,
        "checkpoints/<id>/": checkpoint_url(request_row(minted).pk),
    }[endpoint]
    client = client_for(users.get(who))
    response = getattr(client, verb)(url, {"token": minted.token, "answer": "May 3rd"}, format="json")
    assert response.status_code == expected, response.content
    assert response["Content-Type"] == "application/json"
    if verb != "head":
        body = response.json()
        if expected >= 400:
            assert (
                body["code"]
                == {
                    403: "not_authenticated" if who == "anonymous" else "permission_denied",
                    404: "not_found",
                    405: "method_not_allowed",
                }[expected]
            )
    answered = Pause.objects.get(jti=minted.claims.jti).status == "answered"
    assert answered == (endpoint == "pauses/resume/" and verb == "post" and expected == 200)


def test_lists_hold_only_what_the_caller_may_see(users: dict[str, Any]) -> None:
    mine = mint(owner=users["owner"])
    theirs = mint(owner=users["other"])
    unowned = mint()

    def jtis(who: str) -> set[str]:
        response = client_for(users[who]).get(PAUSES)
        return {row["jti"] for row in response.json()["results"]}

    assert jtis("owner") == {mine.claims.jti}
    assert jtis("other") == {theirs.claims.jti}  # unowned pauses are listed to staff only
    assert jtis("staff") == {mine.claims.jti, theirs.claims.jti, unowned.claims.jti}
    other = client_for(users["other"])
    assert other.get(pause_url(unowned.claims.jti)).status_code == 404
    # ... but anyone holding an unowned pause's token may answer it.
    response = other.post(RESUME, {"token": unowned.token, "answer": "yes"}, format="json")
    assert response.status_code == 200


def test_another_users_pause_is_a_404_exactly_like_a_missing_one(users: dict[str, Any]) -> None:
    minted = mint(owner=users["owner"])
    other = client_for(users["other"])
    hidden = other.get(pause_url(minted.claims.jti))
    missing = other.get(pause_url("no-such-jti"))
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json()


def test_anonymous_is_a_401_challenge_when_the_project_authenticates_with_a_header(
    monkeypatch: pytest.MonkeyPatch, users: dict[str, Any]
) -> None:
    monkeypatch.setattr(PauseViewSet, "authentication_classes", [BasicAuthentication, SessionAuthentication])
    response = client_for().get(PAUSES)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Basic")
    assert response.json()["code"] == "not_authenticated"
    users["owner"].set_password("pw")
    users["owner"].save()
    client = client_for()
    client.credentials(HTTP_AUTHORIZATION="Basic b3duZXI6cHc=")  # owner:pw
    assert client.get(PAUSES).status_code == 200


def test_an_inactive_staff_account_is_refused(users: dict[str, Any]) -> None:
    client = client_for(users["staff"])
    users["staff"].is_active = False
    users["staff"].save()
    assert client.get(CHECKPOINTS).status_code == 403
