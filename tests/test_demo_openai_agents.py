"""`make demo-openai-agents` checks what it shows; here it runs end to end, as CI runs it, on SQLite."""

from __future__ import annotations

from pathlib import Path

from tests.demo_runs import only_on_sqlite, run_demo

pytestmark = only_on_sqlite


def test_the_openai_agents_demo_runs_end_to_end(tmp_path: Path) -> None:
    result = run_demo("demo_openai_agents.py", f"sqlite:///{tmp_path / 'demo.sqlite3'}", timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "stopped for two tool approvals" in out
    assert "An approval that changes the arguments is refused before the token is spent: 400" in out
    assert "alice approved the payment over HTTP: 200" in out
    assert "The run stays paused" in out
    assert "alice rejected the message over HTTP: 200" in out
    assert "[assistant] Paid: 2400 to acme; finance: finance already knows." in out
    assert "ran=False (already continued); payments made: 1, messages sent: 0." in out
