"""The pause tokens a person holds, kept in their session, never in a URL.

A link's token is moved here and the browser is sent on to a URL without it, as Django's
password reset does: the token reaches no Referer header and no access log after the first
request. An owner or staff member who opens a pause from the inbox gets a token signed anew
from the ledger; the ledger still lets exactly one answer through. Beside each token the page
keeps the pause's form (:class:`~turnstate_app.pages.answer_forms.AnswerForm`), so the answer's
POST reads nothing before the lifecycle does.
"""

from __future__ import annotations

from typing import Any

from django.contrib.sessions.backends.base import SessionBase

from turnstate_app.pages.answer_forms import AnswerForm

SESSION_KEY = "turnstate_pages"
MAX_HELD = 50
"""At most this many pauses are held per session: the oldest make way (their links still work)."""


def held(session: SessionBase, jti: str) -> dict[str, Any] | None:
    """What the session holds for pause ``jti``: ``{"token": ..., "form": ...}`` (form maybe absent)."""
    entry = session.get(SESSION_KEY, {}).get(jti)
    return entry if isinstance(entry, dict) and isinstance(entry.get("token"), str) else None


def held_token(session: SessionBase, jti: str) -> str | None:
    entry = held(session, jti)
    return None if entry is None else str(entry["token"])


def held_form(session: SessionBase, jti: str) -> tuple[str, AnswerForm] | None:
    """The token and form kept by the page's last showing of pause ``jti``, when it kept both."""
    entry = held(session, jti)
    if entry is None or not isinstance(entry.get("form"), dict):
        return None
    try:
        return str(entry["token"]), AnswerForm.from_data(entry["form"])
    except (KeyError, TypeError):  # kept by another version of the page: read the ledger instead
        return None


def hold(session: SessionBase, jti: str, token: str, form: AnswerForm | None = None) -> None:
    """Keep ``token`` (and the pause's form) for pause ``jti`` in the session."""
    entries = {key: value for key, value in session.get(SESSION_KEY, {}).items() if key != jti}
    entry: dict[str, Any] = {"token": token}
    if form is not None:
        entry["form"] = form.as_data()
    entries[jti] = entry
    session[SESSION_KEY] = dict(list(entries.items())[-MAX_HELD:])


def release(session: SessionBase, jti: str) -> None:
    """Forget pause ``jti``: it is answered, expired or gone (writes the session only if it held it)."""
    entries = session.get(SESSION_KEY, {})
    if jti in entries:
        session[SESSION_KEY] = {key: value for key, value in entries.items() if key != jti}
