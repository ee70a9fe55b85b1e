"""The getting-started page's Python runs as written, in order, against the test database.

A reader copies these blocks first; a renamed argument or a changed result would make the page
lie, so the page's own text is executed here (the README's quickstarts run in a fresh project:
test_quickstarts).
"""

from __future__ import annotations

import os
import re
import secrets
import string
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from turnstate_app.models import Pause
from turnstate_app.pauses import mint_pause

PAGE = Path(__file__).resolve().parent.parent / "docs" / "getting-started.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```$", PAGE.read_text(), re.MULTILINE | re.DOTALL)


def test_the_page_has_its_two_steps() -> None:
    assert len(BLOCKS) == 2
    assert "mint_pause(" in BLOCKS[0]
    assert "resume_pause(" in BLOCKS[1]


@pytest.mark.django_db(transaction=True)
def test_the_first_pause_and_the_first_answer_run_as_written() -> None:
    namespace: dict[str, object] = {}
    for block in BLOCKS:
        exec(compile(block, str(PAGE), "exec"), namespace)  # noqa: S102 - the page's own code
    resumed = namespace["resumed"]
    assert resumed.answer == "May 11"  # type: ignore[attr-defined]


SH_THEN_TEXT = re.compile(
    r"^```sh\n(?P<command>.*?)^```\n\n?```text\n(?P<printed>.*?)^```$", re.MULTILINE | re.DOTALL
)
EXAMPLE_SITE = "https://example.com"


def http_examples() -> list[tuple[str, str]]:
    """Each ``sh`` block of the page's own text (not the README's, included by name) and what it prints."""
    return [(match["command"], match["printed"].strip()) for match in SH_THEN_TEXT.finditer(PAGE.read_text())]


def test_the_page_answers_over_http_with_basic_auth_and_with_a_session() -> None:
    commands = [command for command, _printed in http_examples()]
    assert len(commands) == 2
    assert "-u alice:s3cret" in commands[0]
    assert "sessionid=$SESSIONID" in commands[1] and "X-CSRFToken: $CSRFTOKEN" in commands[1]


@pytest.mark.parametrize("example", range(2))
@pytest.mark.django_db(transaction=True)
def test_each_http_answer_on_the_page_runs_as_written(
    example: int, live_server: Any, django_user_model: Any
) -> None:
    """Against a live server: the command as shown, with the page's site replaced by the server's.

    DRF's session authentication checks CSRF on its own (no middleware needed), so a session cookie
    alone is refused: the page must show the token beside it."""
    command, printed = http_examples()[example]
    django_user_model.objects.create_user("alice", password="s3cret")
    browser = Client()
    assert browser.login(username="alice", password="s3cret")
    minted = mint_pause(
        run_id="run-1",
        session_id="session-1",
        thread_id="offsite-planning",
        checkpoint_id="cp-1",
        scope_hash="team-42",
        tool_call_id="call-1",
        request={"question": "Which week suits the team: May 4 or May 11?"},
        prompt="Plan the team offsite.",
        messages=[{"role": "user", "content": "Plan the team offsite."}],
    )
    env = {
        "PATH": os.environ["PATH"],
        "TOKEN": minted.token,
        "SESSIONID": browser.cookies[settings.SESSION_COOKIE_NAME].value,
        "CSRFTOKEN": "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(32)),
    }
    result = subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + command.replace(EXAMPLE_SITE, live_server.url)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    pattern = ".*?".join(re.escape(part) for part in printed.split("…"))
    assert re.fullmatch(pattern, result.stdout.strip()), result.stdout + result.stderr
    assert Pause.objects.get(jti=minted.claims.jti).status == "answered"
