"""``continue_pause``: the task that continues an answered pause with the graph or agent it names.

Enqueued by :func:`turnstate_app.handoff.enqueue_continuation` with the pause's jti alone.
The pause recorded its graph's, agent's or ADK app's name (``graph.name`` / ``agent.name`` / ``app.name``);
``TURNSTATE["AGENTS"]`` maps that name to the object, and the object's framework picks the
contrib that continues it, imported here and only now. The contribs continue a run at most
once across processes, so a redelivered task runs nothing again.

Nothing is stranded before the claim. Wiring that is wrong (no entry, a path that does not
import or raises on import, a framework not installed) moves the pause to ``failed`` with the
reason, listed for operators; the task tries again with backoff, deferred on backends that
can defer (``django-tasks-db``'s), up to ``CONTINUATION_ATTEMPTS``, and
``turnstate_redeliver`` hands it again at any time: once the settings are fixed, it
continues. A pause whose records say it can never be continued from here (no recorded name,
an unreadable record) is ``refused``, with the reason, and never handed again.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.utils import timezone

from turnstate_app import telemetry
from turnstate_app.after_answer import same_run_q
from turnstate_app.agents import agent_for
from turnstate_app.errors import InteractionConfigurationError, PayloadBindingError, ThreadBusyError
from turnstate_app.models import Pause
from turnstate_app.pauses import ContinueResult, ResumedPause
from turnstate_app.pauses.handoff import rebuild_resumed
from turnstate_app.pauses.lookup import answered_pause
from turnstate_app.ports import get_default_store
from turnstate_app.ports.model import reading_primary
from turnstate_app.tasks_api import task

logger = logging.getLogger(__name__)

LANGGRAPH = "turnstate_app.contrib.langgraph"
GOOGLE_ADK = "turnstate_app.contrib.google_adk"
OPENAI_AGENTS = "turnstate_app.contrib.openai_agents"
PYDANTIC_AI_GROUP_PREFIX = "pydantic-ai:"  # as turnstate_app.contrib.pydantic_ai names its groups


@task()
def continue_pause(jti: str) -> dict[str, Any]:
    """Continue the answered pause ``jti`` once; JSON of how it went (``ran``, ``reason``, ``minted``)."""
    pause = answered_pause(jti)
    if pause.agent is None:
        return outcome(jti, refuse(pause, unnamed_reason(pause)))
    try:
        target, contrib = agent_for(pause.agent)
    except InteractionConfigurationError as exc:
        return outcome(jti, fail(pause, str(exc)))
    try:
        with reading_primary():  # the row just read, not read again
            answered = rebuild_resumed(pause, get_default_store())
    except PayloadBindingError as exc:
        return outcome(jti, refuse(pause, f"its records cannot be used: {exc}"))
    try:
        return outcome(jti, continue_with(target, contrib, answered))
    except ThreadBusyError as busy:  # given back as failed (nothing ran): the next try is deferred
        retry_at = Pause.objects.filter(pk=pause.pk).values_list("continuation_retry_at", flat=True).first()
        if retry_at is not None:
            defer(jti, retry_at)
        return outcome(jti, ContinueResult(ran=False, reason=str(busy)))


def continue_with(target: Any, contrib: str, answered: ResumedPause) -> ContinueResult:
    """Through the contrib of ``target``'s framework, imported only now."""
    if contrib == LANGGRAPH:
        from turnstate_app.contrib.langgraph import continue_graph

        return continue_graph(target, answered)
    if contrib == OPENAI_AGENTS:
        from turnstate_app.contrib.openai_agents import continue_run

        return continue_run(target, answered)
    if contrib == GOOGLE_ADK:
        from turnstate_app.contrib.google_adk import continue_invocation
        from turnstate_app.contrib.google_adk.runners import runner_of

        return continue_invocation(runner_of(target), answered)
    from turnstate_app.contrib.pydantic_ai import DjangoConversationStore, continue_agent

    return continue_agent(target, answered, store=DjangoConversationStore())


def unnamed_reason(pause: Pause) -> str:
    """Why a pause without a recorded name cannot be continued here, and what its maker does instead."""
    start = (
        f"pause {pause.jti} recorded no graph or agent name, so continue_pause cannot tell which "
        "TURNSTATE['AGENTS'] entry continues it: "
    )
    if (pause.group or "").startswith(PYDANTIC_AI_GROUP_PREFIX):
        return start + (
            "mint PydanticAI pauses with pause_deferred(..., agent=agent), or continue this one with "
            "continue_agent(agent, resumed(jti), store=...)"
        )
    return start + (
        "it was minted with mint_pause, which continue_pause does not continue; continue it from "
        "your own RESUME_HANDLER with continue_once(resumed, run)"
    )


def refuse(pause: Pause, reason: str) -> ContinueResult:
    """queued -> refused, with the reason, for operators; nothing is claimed."""
    Pause.objects.filter(same_run_q(pause)).mark_refused(reason, now=timezone.now())
    logger.error("continue_pause refused pause %s: %s", pause.jti, reason)
    return ContinueResult(ran=False, reason=reason)


def fail(pause: Pause, reason: str) -> ContinueResult:
    """queued -> failed, with the reason; the task tries again after a backoff where it can."""
    now = timezone.now()
    retry_at = Pause.objects.filter(same_run_q(pause)).mark_failed(
        reason, now=now, attempts=pause.continuation_attempts + 1
    )
    logger.error(
        "continue_pause could not continue pause %s (nothing ran): %s; %s",
        pause.jti,
        reason,
        "tried again at " + retry_at.isoformat()
        if retry_at
        else "no tries left: turnstate_redeliver hands it again",
    )
    if retry_at is not None:
        defer(pause.jti, retry_at)
    return ContinueResult(ran=False, reason=reason)


def defer(jti: str, retry_at: datetime) -> None:
    """Enqueue the next try for ``retry_at`` on a backend that can defer; elsewhere
    ``turnstate_redeliver`` (run from cron) is the retry. Never raises."""
    try:
        backend = continue_pause.get_backend()
        if backend.supports_defer:
            continue_pause.using(run_after=retry_at).enqueue(jti)
    except Exception as exc:
        logger.error(
            "pause %s: the next try could not be enqueued; turnstate_redeliver hands it again: %s",
            jti,
            telemetry.described(exc),
        )


def outcome(jti: str, result: ContinueResult) -> dict[str, Any]:
    """What the task returns: JSON, never the run's output (it may hold a transcript)."""
    return {
        "jti": jti,
        "ran": result.ran,
        "reason": result.reason,
        "minted": [minted.claims.jti for minted in result.minted],
    }
