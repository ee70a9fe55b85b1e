"""Telling a transaction the database refused for a concurrent one from any other failure.

The databases' own error codes live here, beside the other statements the ports run, so the
lifecycle asks a question ("was this a conflict?") and never reads a vendor's code."""

from __future__ import annotations

from django.db import OperationalError


def is_serialization_failure(exc: OperationalError) -> bool:
    """A transaction the database refused because a concurrent one changed the same row."""
    cause = exc.__cause__
    if getattr(cause, "sqlstate", None) in SERIALIZATION_SQLSTATES:
        return True
    return bool(exc.args) and exc.args[0] in MYSQL_CONFLICT_ERRORS


SERIALIZATION_SQLSTATES = frozenset({"40001", "40P01"})  # serialization failure, deadlock
MYSQL_CONFLICT_ERRORS = frozenset({1213, 1020})  # deadlock; record changed since last read
