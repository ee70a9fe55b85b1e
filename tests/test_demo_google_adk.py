"""`make demo-google-adk` checks what it shows; here it runs end to end, as CI runs it, on SQLite."""

from __future__ import annotations

from pathlib import Path

from tests.demo_runs import only_on_sqlite, run_demo

pytestmark = only_on_sqlite


def test_the_google_adk_demo_runs_end_to_end(tmp_path: Path) -> None:
    result = run_demo("demo_google_adk.py", f"sqlite:///{tmp_path / 'demo.sqlite3'}", timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "stopped for two adk_request_confirmation calls" in out
    assert 'transfer  {"amount": 2400, "to": "acme"}  (require_confirmation=True)' in out
    assert 'refund    {"order": "A-17"}  Refund order A-17: how much, and to which account?' in out
    assert 'answer {"confirmed": true, "payload": {"amount": "integer", "account": "string"}}' in out
    assert (
        "A payload off that schema is refused before the token is spent: 400"
        " ($.payload.amount: 'all of it' is not of type 'integer')."
    ) in out
    assert "alice confirmed the transfer over HTTP: 200" in out
    assert "The invocation stays paused" in out
    assert "alice filled in the refund over HTTP: 200" in out
    assert "   transfer  2400 to acme" in out
    assert "   refund    40 of A-17 to DE02 1234" in out
    assert (
        "[assistant] Transfer: {'sent': '2400 to acme'}; refund: {'refunded': '40 of A-17 to DE02 1234'}."
    ) in out
    assert "ran=False (already continued); transfers made: 1, refunds made: 1." in out
