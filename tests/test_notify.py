"""``TURNSTATE["NOTIFY"]``: run once a mint commits, never inside it; a failure logged and counted,
never raised into the agent's run; ``email_owner``'s mail with the absolute link; the checks.

The pauses are minted on a real transaction (``transaction=True``): ``on_commit`` runs its
callbacks when the database commits, as in production.
"""

from __future__ import annotations

import logging
import warnings
from io import StringIO
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.core import mail
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.db import connection, transaction
from django.urls import resolve

from tests.factories import UserFactory
from tests.pause_helpers import amint, mint, mint_fields
from tests.statements_counted import counting
from tests.test_statements_per_continuation import MINT_STATEMENTS
from tests.test_telemetry import added, installed
from turnstate_app.checks import check_settings
from turnstate_app.models import Pause
from turnstate_app.notify import answer_link, email_owner
from turnstate_app.pauses import mint_pause

pytestmark = pytest.mark.django_db(transaction=True)

BASE = "https://app.example.com"
EMAIL_OWNER = "turnstate_app.notify.email_owner"
SECRET = "Transfer EUR 9,999 to account DE89 3704?"
"""A question no log line may quote."""

CALLS: list[dict[str, Any]] = []


def record_call(pause: Pause, link: str) -> None:
    """A NOTIFY that notes what it saw: the pause, the link, and whether its mint had committed."""
    CALLS.append(
        {
            "jti": pause.jti,
            "link": link,
            "in_transaction": connection.in_atomic_block,
            "committed": Pause.objects.filter(jti=pause.jti).exists(),
        }
    )


def raise_with_content(pause: Pause, link: str) -> None:
    refusal = f"SMTP refused the message about {SECRET!r}"
    raise RuntimeError(refusal)  # the log may show this line of source, never the value


@pytest.fixture(autouse=True)
def _no_calls_yet() -> None:
    CALLS.clear()


@pytest.fixture
def notify(turnstate_settings: Any) -> Any:
    turnstate_settings["PAGES_BASE_URL"] = BASE
    turnstate_settings["NOTIFY"] = "tests.test_notify.record_call"
    return turnstate_settings


# -- when NOTIFY runs ----------------------------------------------------------------------------


def test_notify_runs_once_after_the_mint_commits(notify: Any) -> None:
    minted = mint()
    expected = {"jti": minted.claims.jti, "link": answer_link(minted.token), "in_transaction": False}
    assert [{**expected, "committed": True}] == CALLS


def test_inside_the_callers_transaction_notify_waits_for_its_commit(notify: Any) -> None:
    with transaction.atomic():
        minted = mint()
        assert CALLS == []
    assert [(call["jti"], call["in_transaction"], call["committed"]) for call in CALLS] == [
        (minted.claims.jti, False, True)
    ]


def test_a_rolled_back_mint_notifies_nobody(notify: Any) -> None:
    with pytest.raises(RuntimeError, match="the agent's step failed"), transaction.atomic():
        minted = mint()
        raise RuntimeError("the agent's step failed")
    assert CALLS == []
    assert not Pause.objects.filter(jti=minted.claims.jti).exists()


async def test_the_async_mint_notifies_once_it_has_committed(notify: Any) -> None:
    minted = await amint()
    assert [(call["jti"], call["in_transaction"], call["committed"]) for call in CALLS] == [
        (minted.claims.jti, False, True)
    ]


def test_without_notify_nothing_runs(turnstate_settings: Any) -> None:
    turnstate_settings["PAGES_BASE_URL"] = BASE
    mint()
    assert CALLS == []
    assert mail.outbox == []


def test_a_raising_notify_is_logged_and_counted_and_the_mint_returns(
    notify: Any, caplog: pytest.LogCaptureFixture
) -> None:
    recorded = installed()
    notify["NOTIFY"] = "tests.test_notify.raise_with_content"
    before = recorded.points()
    with caplog.at_level(logging.ERROR, logger="turnstate_app"):
        minted = mint(request={"question": SECRET})
    assert minted.token and Pause.objects.get(jti=minted.claims.jti).status == "pending"
    assert added(before, recorded.points(), "turnstate.notify.failures") == 1
    [failure] = [r for r in caplog.records if r.name == "turnstate_app.notify"]
    assert failure.levelno == logging.ERROR and failure.exc_info is None
    message = failure.getMessage()
    assert minted.claims.jti in message and "RuntimeError" in message
    assert SECRET not in caplog.text and "SMTP refused" not in caplog.text


def test_a_notify_that_does_not_import_is_a_counted_failure_not_the_agents(
    notify: Any, caplog: pytest.LogCaptureFixture
) -> None:
    recorded = installed()
    notify["NOTIFY"] = "tests.no_such_module.notify"
    before = recorded.points()
    with caplog.at_level(logging.ERROR, logger="turnstate_app"):
        minted = mint()
    assert Pause.objects.filter(jti=minted.claims.jti).exists()
    assert added(before, recorded.points(), "turnstate.notify.failures") == 1
    assert "ImportError" in caplog.text or "ModuleNotFoundError" in caplog.text


def test_notify_adds_no_statement_to_the_mint(notify: Any) -> None:
    owner = UserFactory.create(email="owner@example.com")
    notify["NOTIFY"] = EMAIL_OWNER
    mint()  # the session's own set-up statements are not the mint's
    fields = mint_fields(owner=owner)
    with counting() as minting:
        mint_pause(**fields)
    assert len(mail.outbox) == 1
    assert len(minting) <= MINT_STATEMENTS[connection.vendor], minting.listing()


# -- the link and the e-mail ---------------------------------------------------------------------


def test_the_link_is_absolute_and_opens_the_answer_page_with_the_token(turnstate_settings: Any) -> None:
    turnstate_settings["PAGES_BASE_URL"] = BASE + "/"  # a trailing slash makes no double one
    minted = mint()
    link = answer_link(minted.token)
    parts = urlsplit(link)
    assert f"{parts.scheme}://{parts.netloc}" == BASE and not parts.path.startswith("//")
    match = resolve(parts.path)
    assert match.view_name == "turnstate_pages:answer"
    assert match.kwargs == {"token": minted.token}


def test_email_owner_mails_the_owner_the_link(notify: Any) -> None:
    owner = UserFactory.create(username="alice", first_name="Alice", email="alice@example.com")
    notify["NOTIFY"] = EMAIL_OWNER
    minted = mint(owner=owner, agent="trip-planner", request={"question": SECRET})
    [message] = mail.outbox
    assert message.to == ["alice@example.com"]
    assert "\n" not in message.subject and "trip-planner" in message.subject
    assert answer_link(minted.token) in message.body
    assert message.body.count(minted.token) == 1
    assert "Alice" in message.body
    assert SECRET not in message.body and SECRET not in message.subject  # the question stays behind sign-in


def test_email_owner_writes_text_as_text(notify: Any) -> None:
    owner = UserFactory.create(email="bob@example.com")
    notify["NOTIFY"] = EMAIL_OWNER
    mint(owner=owner, agent="R&D <planner>")
    [message] = mail.outbox
    assert "R&D <planner>" in message.subject  # plain text: nothing HTML-escaped
    assert "&amp;" not in f"{message.subject}\n{message.body}"


@pytest.mark.parametrize("email", [None, ""])
def test_email_owner_sends_nothing_without_an_address(notify: Any, email: str | None) -> None:
    recorded = installed()
    notify["NOTIFY"] = EMAIL_OWNER
    owner = UserFactory.create(email="") if email == "" else None
    before = recorded.points()
    mint(owner=owner)
    assert mail.outbox == []
    assert added(before, recorded.points(), "turnstate.notify.failures") == 0


def test_email_owner_called_directly_sends_one_mail(turnstate_settings: Any) -> None:
    owner = UserFactory.create(email="carol@example.com")
    minted = mint(owner=owner)
    email_owner(Pause.objects.get(jti=minted.claims.jti), "https://app.example.com/answers/t/x/")
    [message] = mail.outbox
    assert message.to == ["carol@example.com"] and "https://app.example.com/answers/t/x/" in message.body


def test_email_owner_sends_without_a_warning(turnstate_settings: Any) -> None:
    """Django 6.1 warns on every send of a project that configured no ``MAILERS`` (Django 2028 has
    no default mailer); the e-mail uses whichever mailer the project configures, and the
    project's settings here configure one, as a host on 6.1 should."""
    owner = UserFactory.create(email="dan@example.com")
    minted = mint(owner=owner)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        email_owner(Pause.objects.get(jti=minted.claims.jti), "https://app.example.com/answers/t/y/")
    assert [message.to for message in mail.outbox] == [["dan@example.com"]]


# -- the checks ----------------------------------------------------------------------------------


def ids(turnstate_settings: Any, value: dict[str, Any]) -> list[str]:
    turnstate_settings.replace(value)
    return [str(message.id) for message in check_settings()]


def test_notify_with_a_base_url_passes(turnstate_settings: Any) -> None:
    assert ids(turnstate_settings, {"NOTIFY": EMAIL_OWNER, "PAGES_BASE_URL": BASE}) == []
    assert ids(turnstate_settings, {"PAGES_BASE_URL": "http://127.0.0.1:8000/app"}) == []


@pytest.mark.parametrize("path", ["tests.no_such_module.notify", "turnstate_app.__version__", 7])
def test_e023_notify_unusable(turnstate_settings: Any, path: Any) -> None:
    assert ids(turnstate_settings, {"NOTIFY": path, "PAGES_BASE_URL": BASE}) == ["turnstate.E023"]


def test_e024_notify_without_a_base_url(turnstate_settings: Any) -> None:
    turnstate_settings.replace({"NOTIFY": EMAIL_OWNER})
    [message] = check_settings()
    assert message.id == "turnstate.E024" and "PAGES_BASE_URL" in message.msg and message.hint


@pytest.mark.parametrize(
    "base", ["app.example.com", "/answers", "ftp://app.example.com", "https://", "https://x.com/?a=1", 8000]
)
def test_e025_a_base_url_nobody_can_open(turnstate_settings: Any, base: Any) -> None:
    assert ids(turnstate_settings, {"NOTIFY": EMAIL_OWNER, "PAGES_BASE_URL": base}) == ["turnstate.E025"]


@pytest.mark.django_db(databases="__all__")  # Django 6's own checks look at every database
def test_manage_py_check_refuses_notify_without_a_base_url(turnstate_settings: Any, settings: Any) -> None:
    turnstate_settings.replace({"NOTIFY": EMAIL_OWNER})
    with pytest.raises(SystemCheckError, match=r"turnstate\.E024"):
        call_command("check", stdout=StringIO(), stderr=StringIO())
