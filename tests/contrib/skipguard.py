"""A pytest plugin: a skipped integration test fails the run.

The integrations' extras are installed in every test environment, so a skip there
means a missing package or database feature that would otherwise pass unnoticed.
"""

from __future__ import annotations

from typing import Any

import pytest

_skipped: list[str] = []


def _is_contrib(nodeid: str) -> bool:
    return "/contrib/" in "/" + nodeid.replace("\\", "/")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and _is_contrib(report.nodeid):
        _skipped.append(report.nodeid)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.skipped and _is_contrib(report.nodeid):
        _skipped.append(report.nodeid)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _skipped:
        terminalreporter.write_line(
            f"integration tests skipped, which fails the run: {', '.join(_skipped)}", red=True
        )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _skipped and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
