"""The lifecycle page's shared ``RESUME_HANDLER`` runs as written: plain and graph pauses, one handler.

The block is the page's own text, written out as a module (a task must be importable by its
path) and wired as the page says, on Django's ``ImmediateBackend`` so the task runs in the hand-off.
"""

from __future__ import annotations

import re
import sys
import uuid
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

from tests.contrib.registered import AGENTS, trip
from turnstate_app.contrib.langgraph import pause_interrupts
from turnstate_app.models import Pause
from turnstate_app.pauses import mint_pause, resume_pause

PAGE = Path(__file__).resolve().parent.parent / "docs" / "lifecycle.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```$", PAGE.read_text(), re.MULTILINE | re.DOTALL)
(SHARED,) = [block for block in BLOCKS if "def on_answer" in block and "enqueue_continuation" in block]
MODULE = "docs_shared_handoff"
TASKS_API = "django.tasks" if find_spec("django.tasks") else "django_tasks"

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def shared_handler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: Any, turnstate_settings: Any
) -> None:
    (tmp_path / f"{MODULE}.py").write_text(SHARED)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    settings.TASKS = {"default": {"BACKEND": f"{TASKS_API}.backends.immediate.ImmediateBackend"}}
    turnstate_settings["AGENTS"] = dict(AGENTS)
    turnstate_settings["RESUME_HANDLER"] = f"{MODULE}.on_answer"
    turnstate_settings["HANDOFF_TIMEOUT"] = 60  # the answer waits for the whole run, even on a slow machine


def test_the_page_wires_one_handler_for_both_kinds() -> None:
    assert "agent__isnull=False" in SHARED and "continue_once(" in SHARED


def test_one_handler_continues_a_plain_pause_and_a_graph_pause(shared_handler: None) -> None:
    thread = f"trip-{uuid.uuid4().hex[:12]}"
    config: Any = {"configurable": {"thread_id": thread}}
    trip.invoke({"transcript": []}, config)
    (graph_pause,) = pause_interrupts(trip, config, run_id=thread, session_id="s")
    plain_pause = mint_pause(
        run_id="run-1",
        session_id="session-1",
        thread_id=f"offsite-{uuid.uuid4().hex[:12]}",
        checkpoint_id="cp-1",
        scope_hash="team-42",
        tool_call_id="call-1",
        request={"question": "May 4 or May 11?"},
        prompt="Plan the team offsite.",
        messages=[{"role": "user", "content": "Plan the team offsite."}],
    )

    resume_pause(plain_pause.token, "May 11")
    resume_pause(graph_pause.token, {"approved": True})

    for minted in (plain_pause, graph_pause):
        pause = Pause.objects.get(jti=minted.claims.jti)
        assert (pause.continuation, pause.continuation_reason) == ("continued", None), minted.claims
    assert Pause.objects.get(jti=graph_pause.claims.jti).agent == "task-trip"
