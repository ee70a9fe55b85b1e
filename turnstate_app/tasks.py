"""``continue_pause``: the task that continues an answered pause with the graph or agent it names.

Enqueued by :func:`turnstate_app.handoff.enqueue_continuation` with the pause's jti alone.
The pause recorded its graph's or agent's name (``graph.name`` / ``agent.name``);
``TURNSTATE["AGENTS"]`` maps that name to the object, and the object's framework picks the
contrib that continues it, imported here and only now. The contribs continue a run at most
once across processes, so a redelivered task runs nothing again.

Wiring that is wrong (no entry, a path that does not import, a framework not installed) is an
``InteractionConfigurationError``: the task fails, nothing is claimed, and once the settings
are fixed the same task continues the pause. A pause with no recorded identity can never be
told apart, so it is recorded as a failed continuation (listed for operators), unclaimed.
"""

from __future__ import annotations

import logging
from typing import Any

from turnstate_app.agents import agent_for
from turnstate_app.models import Pause
from turnstate_app.pauses import ContinueResult, ResumedPause, resumed
from turnstate_app.pauses.lookup import answered_pause
from turnstate_app.tasks_api import task

logger = logging.getLogger(__name__)

LANGGRAPH = "turnstate_app.contrib.langgraph"
OPENAI_AGENTS = "turnstate_app.contrib.openai_agents"


@task()
def continue_pause(jti: str) -> dict[str, Any]:
    """Continue the answered pause ``jti`` once; JSON of how it went (``ran``, ``reason``, ``minted``)."""
    pause = answered_pause(jti)
    if pause.agent is None:
        return outcome(jti, refuse_unnamed(pause))
    target, contrib = agent_for(pause.agent)
    return outcome(jti, continue_with(target, contrib, resumed(jti)))


def continue_with(target: Any, contrib: str, answered: ResumedPause) -> ContinueResult:
    """Through the contrib of ``target``'s framework, imported only now."""
    if contrib == LANGGRAPH:
        from turnstate_app.contrib.langgraph import continue_graph

        return continue_graph(target, answered)
    if contrib == OPENAI_AGENTS:
        from turnstate_app.contrib.openai_agents import continue_run

        return continue_run(target, answered)
    from turnstate_app.contrib.pydantic_ai import DjangoConversationStore, continue_agent

    return continue_agent(target, answered, store=DjangoConversationStore())


def refuse_unnamed(pause: Pause) -> ContinueResult:
    """A failed continuation with the reason, for operators; nothing is claimed."""
    reason = (
        f"pause {pause.jti} recorded no graph or agent name, so continue_pause cannot tell which "
        "TURNSTATE['AGENTS'] entry continues it: mint PydanticAI pauses with pause_deferred(..., agent=...) "
        "(LangGraph and OpenAI Agents SDK pauses record their name); continue this one with "
        "continue_graph / continue_agent / continue_run"
    )
    Pause.objects.filter(pk=pause.pk).mark_continuation_failed(reason)
    logger.error("continue_pause refused pause %s: %s", pause.jti, reason)
    return ContinueResult(ran=False, reason=reason)


def outcome(jti: str, result: ContinueResult) -> dict[str, Any]:
    """What the task returns: JSON, never the run's output (it may hold a transcript)."""
    return {
        "jti": jti,
        "ran": result.ran,
        "reason": result.reason,
        "minted": [minted.claims.jti for minted in result.minted],
    }
