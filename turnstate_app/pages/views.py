"""The inbox, the answer page and the link that leads to it.

Who sees which pause is the ledger's rule (``PauseQuerySet.for_user``, and the token for an
unowned pause); who may answer, and what answering does, is
:func:`~turnstate_app.pauses.resume_pause`'s, as over REST. These views only turn requests
into those calls and their outcomes into pages. No page lets the browser send a Referer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_protect
from django.views.decorators.http import require_http_methods

from turnstate_app.choices import PauseStatus
from turnstate_app.errors import AnswerValidationError, CheckpointFieldError, TokenSignatureError
from turnstate_app.keyset import BadCursorError
from turnstate_app.managers import claims_of, effective_status
from turnstate_app.models import Pause
from turnstate_app.pages import held
from turnstate_app.pages.answer_forms import AnswerForm, FormError, answer_from, form_for
from turnstate_app.pages.inbox import inbox_page, waiting_for
from turnstate_app.pages.outcomes import (
    ALREADY_ANSWERED,
    BAD_LINK,
    EXPIRED,
    NOT_FOUND,
    NOT_YOURS,
    Outcome,
    answered,
    refusal,
)
from turnstate_app.pages.shown import pause_context, read_question
from turnstate_app.pause_rows import with_request
from turnstate_app.pauses import resume_pause
from turnstate_app.pauses.tokens import read_token, sign_claims

logger = logging.getLogger(__name__)

INBOX_TEMPLATE = "turnstate_app/pages/inbox.html"
PAUSE_TEMPLATE = "turnstate_app/pages/pause.html"
OUTCOME_TEMPLATE = "turnstate_app/pages/outcome.html"

View = Callable[..., HttpResponseBase]


NO_REFERRER = "no-referrer"
SAME_ORIGIN = "same-origin"
"""The policy of a page holding the answer form. Under ``no-referrer`` a browser sends a form's
POST with ``Origin: null`` and no Referer, which Django's CSRF check refuses (over HTTPS it
requires one of them); ``same-origin`` names this site to this site only, and the form's URL
never holds a token."""


def no_referrer(view: View) -> View:
    """Every response, the sign-in redirect included, tells the browser to send no Referer
    (the answer form's page excepted: :data:`SAME_ORIGIN`)."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        response = view(request, *args, **kwargs)
        response.setdefault("Referrer-Policy", NO_REFERRER)
        return response

    return wrapped


def page(view: View) -> View:
    """A page of the app: signed in, never cached, no Referer."""
    return no_referrer(never_cache(login_required(view)))


# -- the inbox --------------------------------------------------------------------------------


@page
@require_http_methods(["GET", "HEAD"])
def inbox(request: HttpRequest) -> HttpResponse:
    """The person's pending pauses (staff: everyone's, ``?owner=<user id>``), newest first."""
    owner = request.GET.get("owner")
    try:
        listed = inbox_page(waiting_for(request.user, timezone.now(), owner=owner), request.GET.get("after"))
    except BadCursorError:
        context = {"rows": [], "bad_query": True, "owner": owner}
        return render(request, INBOX_TEMPLATE, context, status=400)
    context = {"rows": listed.rows, "after": listed.after, "owner": owner, "paged": "after" in request.GET}
    return render(request, INBOX_TEMPLATE, context)


# -- the link -----------------------------------------------------------------------------------


@no_referrer
@never_cache
@require_http_methods(["GET", "HEAD"])
def answer(request: HttpRequest, token: str) -> HttpResponseBase:
    """Checks the link's token (spending nothing), keeps it in the session, and sends the browser on
    to the pause's page, whose URL does not carry it — through the sign-in first when no one is
    signed in.

    The token is kept before the sign-in: ``login_required`` here would carry it on, in the
    sign-in's ``next`` parameter, to the sign-in page's address, its Referer and the access log.
    ``next`` is the pause's page instead, and Django's ``login`` keeps the session's data, the
    token with it. Nothing is shown here but the redirect (or that the link is not valid)."""
    try:
        claims = read_token(token)
    except TokenSignatureError:
        return outcome_page(request, BAD_LINK)
    held.hold(request.session, claims.jti, token)
    target = reverse("turnstate_pages:pause", kwargs={"jti": claims.jti})
    if not request.user.is_authenticated:
        return redirect_to_login(target)
    return HttpResponseRedirect(target)


# -- the pause --------------------------------------------------------------------------------


@page
@csrf_protect
@require_http_methods(["GET", "HEAD", "POST"])
def pause(request: HttpRequest, jti: str) -> HttpResponseBase:
    """The question and its form (GET); the answer (POST). Someone else's pause: 404, and 403 on POST."""
    if request.method == "POST":
        return answer_pause(request, jti)
    return show_pause(request, jti)


def show_pause(request: HttpRequest, jti: str) -> HttpResponseBase:
    """The question and its form; the token (the link's, or one signed anew from the ledger, which
    still takes one answer only) and the form are kept in the session for the POST."""
    now = timezone.now()
    found = visible_pause(request, jti, now)
    if found is None:
        return outcome_page(request, NOT_FOUND)
    try:
        gone = settled(found)
        if gone is not None:
            return forget(request, jti, gone)
        question = read_question(found)
        form = form_for(found.answer_schema, question)
        token = held.held_token(request.session, jti) or sign_claims(claims_of(found))
    except Exception as error:  # a refusal is a page; anything else is a bug, raised
        return refused(request, jti, error)
    held.hold(request.session, jti, token, form)
    return form_page(request, pause_context(found, question, form))


def answer_pause(request: HttpRequest, jti: str) -> HttpResponseBase:
    """The filled form through ``resume_pause``, with the token the session holds; the form and
    the token kept when the page was shown, so the ledger is read only by the lifecycle."""
    kept = held.held_form(request.session, jti)
    if kept is None:
        found = visible_pause(request, jti, timezone.now())
        if found is None:
            exists = Pause.objects.filter(jti=jti).exists()
            return outcome_page(request, NOT_YOURS if exists else NOT_FOUND)
        try:
            kept = (held.held_token(request.session, jti) or sign_claims(claims_of(found)), pause_form(found))
        except Exception as error:
            return refused(request, jti, error)
    token, form = kept
    try:
        given = answer_from(form, request.POST)
        resumed = resume_pause(token, given, user=request.user)
    except FormError as exc:
        return form_again(request, jti, exc.errors)
    except AnswerValidationError as exc:  # the schema refused it: the pause stays pending
        return form_again(request, jti, {form.error_field: exc.messages})
    except CheckpointFieldError as exc:  # not storable as JSON, or too large
        return form_again(request, jti, {form.error_field: [exc.problem]})
    except Exception as error:
        return refused(request, jti, error)
    held.release(request.session, jti)
    return outcome_page(request, answered(resumed.resumable))


def pause_form(found: Pause) -> AnswerForm:
    """The pause's form, from its ledger row, when the session kept none (the page was not shown)."""
    return form_for(found.answer_schema, read_question(found))


def form_again(request: HttpRequest, jti: str, errors: dict[str, list[str]]) -> HttpResponseBase:
    """The form once more, as the person filled it, each error beside its field; nothing was answered."""
    found = visible_pause(request, jti, timezone.now())
    if found is None:
        return outcome_page(request, NOT_FOUND)
    try:
        question = read_question(found)
    except Exception as error:
        return refused(request, jti, error)
    context = pause_context(found, question, form_for(found.answer_schema, question), request.POST, errors)
    return form_page(request, context, status=400)


def form_page(request: HttpRequest, context: dict[str, Any], status: int = 200) -> HttpResponse:
    """The answer form, under the referrer policy its POST can pass Django's CSRF check with."""
    response = render(request, PAUSE_TEMPLATE, context, status=status)
    response["Referrer-Policy"] = SAME_ORIGIN
    return response


def visible_pause(request: HttpRequest, jti: str, now: datetime) -> Pause | None:
    """Pause ``jti`` with its request, if this person may see it: its owner, staff, or (unowned)
    the holder of its link. None otherwise, so another's pause looks like no pause at all."""
    found = with_request(Pause.objects.with_effective_status(now).filter(jti=jti)).first()
    if found is None:
        return None
    user: Any = request.user
    if user.is_staff or found.owner_id == user.pk:
        return found
    if found.owner_id is None and held.held_token(request.session, jti) is not None:
        return found
    return None


def settled(found: Pause) -> Outcome | None:
    """The page of a pause that can no longer be answered; None while it can."""
    status = effective_status(found)
    if status == PauseStatus.ANSWERED:
        return ALREADY_ANSWERED
    return EXPIRED if status == PauseStatus.EXPIRED else None


def refused(request: HttpRequest, jti: str, error: Exception) -> HttpResponseBase:
    """The page for a refusal; an error that is no refusal is raised, as the bug it is."""
    outcome = refusal(error)
    if outcome is None:
        raise error
    if outcome.status >= 500:
        logger.warning("turnstate page unavailable (%s)", type(error).__name__, exc_info=error)
    return forget(request, jti, outcome)


def forget(request: HttpRequest, jti: str, outcome: Outcome) -> HttpResponseBase:
    """The outcome's page; a pause that cannot be answered any more is dropped from the session."""
    if outcome.status in (404, 409, 410) or outcome.code == BAD_LINK.code:
        held.release(request.session, jti)
    return outcome_page(request, outcome)


def outcome_page(request: HttpRequest, outcome: Outcome) -> HttpResponse:
    return render(request, OUTCOME_TEMPLATE, {"outcome": outcome}, status=outcome.status)
