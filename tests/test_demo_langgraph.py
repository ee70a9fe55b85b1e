"""`make demo-langgraph` checks what it shows; here it runs end to end, as CI runs it, on SQLite."""

from __future__ import annotations

from pathlib import Path

from tests.demo_runs import only_on_sqlite, run_demo

pytestmark = only_on_sqlite


def test_the_langgraph_demo_runs_end_to_end(tmp_path: Path) -> None:
    result = run_demo("demo_langgraph.py", f"sqlite:///{tmp_path / 'demo.sqlite3'}", timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "stopped at two parallel interrupts" in out
    assert "refused before the token is spent:\n   400 " in out
    assert "was not asked again (2 pauses in all, 1 interrupt waiting)" in out
    assert "still owned by alice: 'Window or aisle?'" in out
    assert "seat=window meal=vegetarian" in out and "no fork" in out
    assert "ran=False reason='already continued'; node runs and checkpoints unchanged" in out
    assert "no orphaned interrupts or pauses" in out
