"""`make demo` checks what it shows; here it runs end to end, as CI runs it, on SQLite."""

from __future__ import annotations

from pathlib import Path

from tests.demo_runs import only_on_sqlite, run_demo

pytestmark = only_on_sqlite


def test_the_demo_runs_end_to_end(tmp_path: Path) -> None:
    result = run_demo("demo.py", f"sqlite:///{tmp_path / 'demo.sqlite3'}", timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "resumable=True" in out and "resumable=False" in out
    assert "answered" in out and "409" in out and "already_answered" in out
    assert "rebuilt the turn from the database alone" in out
    assert "Booked: the offsite is the week of May 11" in out
    # It ends with the answer link alice was e-mailed (NOTIFY) for the question still waiting.
    last = out.strip().splitlines()[-1].strip()
    assert last.startswith("http://127.0.0.1:8000/answers/t/") and last.endswith("/"), last
    assert "opens its answer page after she signs in (302 to /accounts/login/)" in out


def test_the_demo_fails_loudly_when_the_database_is_down(tmp_path: Path) -> None:
    result = run_demo("demo.py", "postgres://postgres@127.0.0.1:1/nowhere", timeout=120)
    assert result.returncode == 1
    assert "DEMO FAILED: step 'prepare the database' failed" in result.stdout
