"""The answer page and the link to it: who may see and answer, CSRF, the token kept out of URLs,
the question shown as text, each outcome as a page, and what an answer costs in statements."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.api_support import RESUME
from tests.api_support import client_for as api_client_for
from tests.api_support import request_row as stored_request
from tests.encryption_support import GIVES, KEY_A
from tests.pages_support import (
    LOGIN,
    PAGES,
    answer_of,
    client_for,
    link_url,
    openai_approval,
    pause_url,
)
from tests.pause_helpers import answered, expire, mint
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pages import held

pytestmark = pytest.mark.django_db

ENUM = {"enum": ["yes", "no"]}


def status_of(jti: str) -> str:
    return str(Pause.objects.get(jti=jti).status)


def held_tokens(client: Any) -> dict[str, Any]:
    return dict(client.session.get(held.SESSION_KEY, {}))


# -- who sees, who answers ---------------------------------------------------------------------------


def test_the_owner_and_staff_see_the_question_and_someone_else_gets_a_404(users: dict[str, Any]) -> None:
    minted = mint(owner=users["owner"], request={"question": "Fly on Tuesday?\nThe fare is lower."})
    url = pause_url(minted.claims.jti)
    for who in ("owner", "staff"):
        response = client_for(users[who]).get(url)
        assert response.status_code == 200
        assert "Fly on Tuesday?<br>The fare is lower." in response.content.decode()
    response = client_for(users["other"]).get(url)
    assert response.status_code == 404
    assert "Fly on Tuesday" not in response.content.decode()
    assert client_for(users["other"]).get(pause_url("no-such-pause")).content == response.content


def test_someone_elses_pause_is_a_403_on_post_and_stays_pending(users: dict[str, Any]) -> None:
    minted = mint(owner=users["owner"], answer_schema=ENUM)
    response = client_for(users["other"]).post(pause_url(minted.claims.jti), {"answer": "yes"})
    assert response.status_code == 403
    assert status_of(minted.claims.jti) == "pending"


def test_someone_elses_pause_is_a_403_on_post_even_with_its_link(users: dict[str, Any]) -> None:
    minted = mint(owner=users["owner"], answer_schema=ENUM)
    client = client_for(users["other"])
    client.get(link_url(minted.token))
    assert client.get(pause_url(minted.claims.jti)).status_code == 404
    assert client.post(pause_url(minted.claims.jti), {"answer": "yes"}).status_code == 403
    assert status_of(minted.claims.jti) == "pending"


def test_an_unowned_pause_is_for_whoever_holds_its_link(users: dict[str, Any]) -> None:
    minted = mint(owner=None, answer_schema=ENUM)
    url = pause_url(minted.claims.jti)
    assert client_for(users["other"]).get(url).status_code == 404
    assert client_for(users["other"]).post(url, {"answer": "yes"}).status_code == 403
    holder = client_for(users["other"])
    holder.get(link_url(minted.token))
    assert holder.get(url).status_code == 200
    assert holder.post(url, {"answer": "yes"}).status_code == 200
    assert answer_of(minted) == "yes"


@pytest.mark.parametrize("path", ["", "some-jti/"])
def test_every_page_needs_a_signed_in_person_and_sends_them_back_after(path: str) -> None:
    response = client_for().get(PAGES + path)
    assert response.status_code == 302
    assert response["Location"] == f"{LOGIN}?next={PAGES}{path}"
    assert response["Referrer-Policy"] == "no-referrer"


def test_the_link_keeps_its_token_through_the_sign_in_which_never_sees_it(users: dict[str, Any]) -> None:
    minted = mint(owner=None, answer_schema=ENUM)
    browser = client_for()
    to_login = browser.get(link_url(minted.token))  # straight to the sign-in, which never sees it
    assert to_login.status_code == 302
    assert to_login["Location"] == f"{LOGIN}?next={pause_url(minted.claims.jti)}"
    assert minted.token not in to_login["Location"]
    assert to_login["Referrer-Policy"] == "no-referrer"
    browser.force_login(users["other"])  # Django's login keeps the session's data
    assert browser.get(pause_url(minted.claims.jti)).status_code == 200
    assert browser.post(pause_url(minted.claims.jti), {"answer": "no"}).status_code == 200
    assert answer_of(minted) == "no"


# -- the link ----------------------------------------------------------------------------------------


def test_the_link_moves_the_token_into_the_session_and_redirects_to_a_url_without_it(
    users: dict[str, Any],
) -> None:
    minted = mint(owner=users["owner"], answer_schema=ENUM)
    client = client_for(users["owner"])
    response = client.get(link_url(minted.token))
    assert response.status_code == 302
    assert response["Location"] == pause_url(minted.claims.jti)
    assert minted.token not in response["Location"]
    assert response["Referrer-Policy"] == "no-referrer"
    assert held_tokens(client)[minted.claims.jti]["token"] == minted.token
    page = client.get(response["Location"])
    # The form's page names this site to this site only: under no-referrer a browser posts the
    # form with "Origin: null" and no Referer, which Django's CSRF check refuses.
    assert page.status_code == 200 and page["Referrer-Policy"] == "same-origin"
    assert minted.token not in page.content.decode()
    assert client.post(response["Location"], {"answer": "no"}).status_code == 200
    assert answer_of(minted) == "no"
    assert minted.claims.jti not in held_tokens(client)


@pytest.mark.parametrize("token", ["not-a-token", "a" * 5000, "x:y:z"])
def test_a_bad_link_is_a_page_saying_so_never_a_500(users: dict[str, Any], token: str) -> None:
    response = client_for(users["owner"]).get(link_url(token))
    assert response.status_code == 400 and response["Referrer-Policy"] == "no-referrer"
    assert "This link is not valid" in response.content.decode()


def test_a_link_with_a_changed_signature_is_not_valid(users: dict[str, Any]) -> None:
    minted = mint(owner=users["owner"])
    forged = minted.token[:-2] + ("AA" if not minted.token.endswith("AA") else "BB")
    response = client_for(users["owner"]).get(link_url(forged))
    assert response.status_code == 400 and held.SESSION_KEY not in client_for(users["owner"]).session


# -- CSRF ----------------------------------------------------------------------------------------------


def test_an_answer_without_the_csrf_token_is_refused_and_with_it_taken(users: dict[str, Any]) -> None:
    minted = mint(owner=users["owner"], answer_schema=ENUM)
    client = client_for(users["owner"], enforce_csrf_checks=True)
    url = pause_url(minted.claims.jti)
    client.get(url)
    assert client.post(url, {"answer": "yes"}).status_code == 403
    assert status_of(minted.claims.jti) == "pending"
    csrf = client.cookies["csrftoken"].value
    assert client.post(url, {"answer": "yes", "csrfmiddlewaretoken": csrf}).status_code == 200
    assert answer_of(minted) == "yes"


# -- the question as text ---------------------------------------------------------------------------------


def test_html_in_the_question_and_the_arguments_is_shown_as_text(users: dict[str, Any]) -> None:
    script = "<script>alert(1)</script>"
    minted = mint(
        owner=users["owner"],
        request={"question": f"Send {script}?", "tool_name": "send", "args": {"body": script, script: 1}},
    )
    html = client_for(users["owner"]).get(pause_url(minted.claims.jti)).content.decode()
    assert "<script" not in html
    assert html.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 3


def test_a_request_without_a_question_shows_its_tool_call_as_a_table(users: dict[str, Any]) -> None:
    minted = openai_approval(owner=users["owner"])
    html = client_for(users["owner"]).get(pause_url(minted.claims.jti)).content.decode()
    assert "<caption>The call to refund</caption>" in html
    assert '<th scope="row">order</th><td><pre>A-1</pre></td>' in html
    assert '<th scope="row">amount</th><td><pre>30</pre></td>' in html


# -- outcomes ---------------------------------------------------------------------------------------------


def test_answering_from_the_inbox_signs_the_pause_anew_and_takes_one_answer(users: dict[str, Any]) -> None:
    minted = mint(owner=users["owner"], answer_schema=ENUM)
    url = pause_url(minted.claims.jti)
    first, second = client_for(users["owner"]), client_for(users["staff"])
    first.get(url), second.get(url)
    response = first.post(url, {"answer": "yes"})
    assert response.status_code == 200 and "your answer is in" in response.content.decode()
    late = second.post(url, {"answer": "no"})
    assert late.status_code == 409 and "Already answered" in late.content.decode()
    assert answer_of(minted) == "yes"


def test_an_answer_posted_without_showing_the_page_first_is_taken(users: dict[str, Any]) -> None:
    minted = mint(owner=users["owner"], answer_schema={"type": "integer"})
    assert client_for(users["owner"]).post(pause_url(minted.claims.jti), {"answer": "4"}).status_code == 200
    assert answer_of(minted) == 4


def test_an_answered_pause_says_so(users: dict[str, Any]) -> None:
    minted = answered(owner=users["owner"])
    response = client_for(users["owner"]).get(pause_url(minted.claims.jti))
    assert response.status_code == 409 and "Already answered" in response.content.decode()


def test_an_expired_pause_says_so_on_get_and_on_post(users: dict[str, Any]) -> None:
    minted = mint(owner=users["owner"], answer_schema=ENUM)
    client = client_for(users["owner"])
    client.get(pause_url(minted.claims.jti))
    expire(minted, days=1)
    response = client.post(pause_url(minted.claims.jti), {"answer": "yes"})
    assert response.status_code == 410 and "expired" in response.content.decode()
    assert client.get(pause_url(minted.claims.jti)).status_code == 410


def test_an_answer_whose_run_cannot_continue_says_so(users: dict[str, Any]) -> None:
    minted = mint(owner=users["owner"], answer_schema=ENUM, failing=True)
    response = client_for(users["owner"]).post(pause_url(minted.claims.jti), {"answer": "yes"})
    assert response.status_code == 200
    assert "the run cannot be continued from here" in response.content.decode()


def test_a_question_changed_at_rest_is_an_unreadable_page_and_nothing_is_answered(
    users: dict[str, Any],
) -> None:
    minted = mint(owner=users["owner"], answer_schema=ENUM)
    CheckpointMetadata.objects.filter(pk=stored_request(minted).pk).update(value='{"question": "Pay 1000?"}')
    client = client_for(users["owner"])
    response = client.get(pause_url(minted.claims.jti))
    assert response.status_code == 400
    assert "cannot be read" in response.content.decode() and "Pay 1000" not in response.content.decode()
    assert client.post(pause_url(minted.claims.jti), {"answer": "yes"}).status_code == 400
    assert status_of(minted.claims.jti) == "pending"


@pytest.fixture
def ring(turnstate_settings: dict[str, Any]) -> Iterator[dict[str, Any]]:
    GIVES.clear()
    GIVES["keys"] = [KEY_A]
    turnstate_settings["ENCRYPTION_KEY_RING"] = "tests.encryption_support.gives"
    yield GIVES
    GIVES.clear()


def test_keys_that_cannot_be_had_are_a_try_again_page(users: dict[str, Any], ring: dict[str, Any]) -> None:
    minted = mint(owner=users["owner"], answer_schema=ENUM)
    client = client_for(users["owner"])
    client.get(pause_url(minted.claims.jti))
    ring["raises"] = RuntimeError("the tenant store is down")
    assert client.get(pause_url(minted.claims.jti)).status_code == 503
    response = client.post(pause_url(minted.claims.jti), {"answer": "yes"})
    assert response.status_code == 503 and "Try again shortly" in response.content.decode()
    assert status_of(minted.claims.jti) == "pending"


# -- statements ----------------------------------------------------------------------------------------


def session_write_statements(client: Any) -> int:
    """What writing the person's session costs: its UPDATE, inside Django's atomic block."""
    session = client.session
    session["probe"] = True
    with CaptureQueriesContext(connection) as written:
        session.save()
    return len(written)


def test_an_answer_through_the_page_costs_no_more_statements_than_over_rest_plus_the_session(
    users: dict[str, Any],
) -> None:
    over_rest = mint(owner=users["owner"], answer_schema=ENUM)
    on_page = mint(owner=users["owner"], answer_schema=ENUM)
    api = api_client_for(users["owner"])
    with CaptureQueriesContext(connection) as rest:
        assert api.post(RESUME, {"token": over_rest.token, "answer": "yes"}, format="json").status_code == 200
    client = client_for(users["owner"])
    client.get(pause_url(on_page.claims.jti))
    with CaptureQueriesContext(connection) as page:
        assert client.post(pause_url(on_page.claims.jti), {"answer": "yes"}).status_code == 200
    session = session_write_statements(client)
    print(f"statements: REST resume {len(rest)}, page POST {len(page)}, a session write {session}")
    assert len(page) <= len(rest) + session
    assert answer_of(on_page) == "yes"
