"""Telling a person that a question waits: ``TURNSTATE["NOTIFY"]``, its link, and an e-mail.

A mint runs in the agent's process, often a worker with no request, so the link is built from
``PAGES_BASE_URL`` and the pages' URL name. ``NOTIFY`` runs once the mint has committed: a
person who follows the link always finds the pause, and a rolled-back mint sends nothing. A
notification that fails is logged and counted (``turnstate.notify.failures``), never raised:
the pause is minted, and the person can still find it in the inbox.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ImproperlyConfigured
from django.core.mail import send_mail
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.module_loading import import_string

from turnstate_app import telemetry
from turnstate_app.conf import conf

if TYPE_CHECKING:
    from turnstate_app.models import Pause

logger = logging.getLogger(__name__)

SUBJECT_TEMPLATE = "turnstate_app/email/pause_subject.txt"
BODY_TEMPLATE = "turnstate_app/email/pause_body.txt"


def answer_link(token: str) -> str:
    """The absolute address of the page that answers the pause ``token`` signs.

    The token travels in this one URL only: the page moves it into the session and redirects.
    """
    base = conf.PAGES_BASE_URL
    if not base:
        raise ImproperlyConfigured("TURNSTATE['PAGES_BASE_URL'] is not set: a link must be absolute.")
    return base.rstrip("/") + reverse("turnstate_pages:answer", kwargs={"token": token})


def notify_minted(pause: Pause, token: str) -> None:
    """Run ``NOTIFY`` for a committed pause; a failure is logged and counted, never raised.

    The log names the failure by its class and frames only: an exception's message may quote
    the question or an address.
    """
    path = conf.NOTIFY
    if path is None:
        return
    try:
        import_string(path)(pause, answer_link(token))
    except Exception as exc:  # whatever the project's callable raises, the agent's run goes on
        telemetry.record("turnstate.notify.failures")
        logger.error(
            "TURNSTATE['NOTIFY'] %s failed for pause %s: %s", path, pause.jti, telemetry.described(exc)
        )


def email_owner(pause: Pause, link: str) -> None:
    """E-mail the pause's owner the link to answer it, with Django's mail API.

    Subject and body come from templates a project overrides; neither holds the question, which
    stays behind the sign-in. A pause without an owner, or an owner without an address, has
    nobody to write to: nothing is sent.
    """
    owner = pause.owner
    address = getattr(owner, "email", "") if owner is not None else ""
    if not address:
        logger.info("pause %s has no owner with an e-mail address: no notification sent", pause.jti)
        return
    context: dict[str, Any] = {"pause": pause, "owner": owner, "link": link}
    subject = "".join(render_to_string(SUBJECT_TEMPLATE, context).splitlines()).strip()
    body = render_to_string(BODY_TEMPLATE, context)
    send_mail(subject, body, None, [address])
