"""`make demo-pydantic-ai` checks what it shows; here it runs end to end, as CI runs it, on SQLite."""

from __future__ import annotations

from pathlib import Path

from tests.demo_runs import only_on_sqlite, run_demo

pytestmark = only_on_sqlite


def test_the_pydantic_ai_demo_runs_end_to_end(tmp_path: Path) -> None:
    result = run_demo("demo_pydantic_ai.py", f"sqlite:///{tmp_path / 'demo.sqlite3'}", timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "stopped for two deferred tool calls" in out
    assert "alice answered the question over HTTP: 200" in out
    assert "The run stays paused" in out
    assert "A malformed approval is refused before the token is spent: 400" in out
    assert "A staff user approved the booking over HTTP: 200" in out
    assert "[assistant] Booked: 2 seats to Lisbon, flying Monday." in out
    assert "ran=False (already continued); bookings made: 1." in out
