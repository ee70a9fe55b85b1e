"""Google ADK on Django's database: a session service, tool confirmations as durable pauses.

Add ``"turnstate_app.contrib.google_adk"`` to ``INSTALLED_APPS`` (extra ``google-adk``).
The public names load lazily, so importing this package before the app registry is ready
(in a settings module, an ``AppConfig``) works, and never imports ADK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from turnstate_app.contrib._lazy import lazy_exports

if TYPE_CHECKING:
    from turnstate_app.contrib.google_adk.continuing import acontinue_invocation, continue_invocation
    from turnstate_app.contrib.google_adk.pausing import apause_confirmations, pause_confirmations
    from turnstate_app.contrib.google_adk.session import DjangoSessionService

__all__ = [
    "DjangoSessionService",
    "acontinue_invocation",
    "apause_confirmations",
    "continue_invocation",
    "pause_confirmations",
]

_EXPORTS = {
    "DjangoSessionService": "turnstate_app.contrib.google_adk.session",
    "pause_confirmations": "turnstate_app.contrib.google_adk.pausing",
    "apause_confirmations": "turnstate_app.contrib.google_adk.pausing",
    "continue_invocation": "turnstate_app.contrib.google_adk.continuing",
    "acontinue_invocation": "turnstate_app.contrib.google_adk.continuing",
}


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
