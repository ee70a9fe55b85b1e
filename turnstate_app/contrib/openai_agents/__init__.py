"""The OpenAI Agents SDK on Django's database: a ``Session``, tool approvals as durable pauses.

Add ``"turnstate_app.contrib.openai_agents"`` to ``INSTALLED_APPS`` (extra ``openai-agents``).
The public names load lazily, so importing this package before the app registry is ready
(in a settings module, an ``AppConfig``) works, and never imports the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from turnstate_app.contrib._lazy import lazy_exports

if TYPE_CHECKING:
    from turnstate_app.contrib.openai_agents.continuing import acontinue_run, continue_run
    from turnstate_app.contrib.openai_agents.errors import (
        StaleRunStateError,
        UnreadableRunStateError,
        UnreadableSessionItemError,
    )
    from turnstate_app.contrib.openai_agents.pausing import apause_approvals, pause_approvals
    from turnstate_app.contrib.openai_agents.session import DjangoSession

__all__ = [
    "DjangoSession",
    "StaleRunStateError",
    "UnreadableRunStateError",
    "UnreadableSessionItemError",
    "acontinue_run",
    "apause_approvals",
    "continue_run",
    "pause_approvals",
]

_EXPORTS = {
    "DjangoSession": "turnstate_app.contrib.openai_agents.session",
    "StaleRunStateError": "turnstate_app.contrib.openai_agents.errors",
    "UnreadableRunStateError": "turnstate_app.contrib.openai_agents.errors",
    "UnreadableSessionItemError": "turnstate_app.contrib.openai_agents.errors",
    "pause_approvals": "turnstate_app.contrib.openai_agents.pausing",
    "apause_approvals": "turnstate_app.contrib.openai_agents.pausing",
    "continue_run": "turnstate_app.contrib.openai_agents.continuing",
    "acontinue_run": "turnstate_app.contrib.openai_agents.continuing",
}


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
