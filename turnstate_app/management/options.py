"""Validators for the commands' options, as argparse ``type=`` callables.

A value argparse accepts goes on into SQL and date arithmetic, where an out-of-range number is
a driver error (``bigint out of range``, ``datatype mismatch``) or an ``OverflowError``, a NUL
is refused by PostgreSQL, and argv that is not UTF-8 reaches the driver as a lone surrogate it
cannot encode: each a traceback. Refused here, each is argparse's own error instead, which a
shell sees as a usage line (exit 2) and ``call_command`` as a ``CommandError``, both naming the
option (argparse prefixes its name to the message).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from django.conf import settings

MAX_DAYS = 36_500
"""A hundred years: ``now - timedelta(days=...)`` stays far inside ``datetime``'s range."""

MAX_SECONDS = MAX_DAYS * 86_400
"""The same hundred years in seconds."""

MAX_COUNT = 1_000_000_000
"""The largest count an option takes: a figure, a page, a bound well inside every database's integers."""

MAX_TEXT = 255
"""The longest id the store keeps (its CharFields' max_length); a longer one matches no row."""

MAX_CURSOR = 100
"""Far longer than any cursor a page prints (an ISO time, ``~``, a 64-bit key)."""

DIGITS = 30
"""No number an option takes has more digits; longer text is not parsed at all."""


def shown(text: str) -> str:
    """The refused value as it may be printed: escaped (a NUL, a surrogate) and cut short."""
    quoted = repr(text)
    return quoted if len(quoted) <= 40 else quoted[:37] + "..."


def bounded_int(minimum: int, maximum: int, unit: str = "") -> Callable[[str], int]:
    """A whole number from ``minimum`` to ``maximum`` (``unit`` names what it counts, e.g. "days")."""
    span = f"a whole number from {minimum} to {maximum}" + (f" {unit}" if unit else "")

    def whole_number(text: str) -> int:
        try:
            if len(text) > DIGITS:
                raise ValueError(text)
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {span}, not {shown(text)}") from None
        if value < 0 <= minimum:
            raise argparse.ArgumentTypeError(f"must not be negative: {span}, not {value}")
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"must be {span}, not {value}")
        return value

    return whole_number


def bounded_text(max_length: int = MAX_TEXT) -> Callable[[str], str]:
    """Text a database can store and compare: no NUL, encodable as UTF-8, at most ``max_length``."""

    def text(value: str) -> str:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise argparse.ArgumentTypeError(
                f"must be valid UTF-8 text (argv held bytes that are not), not {shown(value)}"
            ) from None
        if "\x00" in value:
            raise argparse.ArgumentTypeError(f"must not contain a NUL character, not {shown(value)}")
        if len(value) > max_length:
            raise argparse.ArgumentTypeError(f"must be at most {max_length} characters, not {len(value)}")
        return value

    return text


identifier = bounded_text()
"""A thread id, a jti: what the store keeps in a CharField(max_length=255)."""

cursor = bounded_text(MAX_CURSOR)
"""A page's cursor as printed; whether it is the key of a row is the keyset's to judge."""


def database_alias(value: str) -> str:
    """One of ``settings.DATABASES``' aliases."""
    if value not in settings.DATABASES:
        known = ", ".join(sorted(settings.DATABASES))
        raise argparse.ArgumentTypeError(
            f"must be a database alias of settings.DATABASES ({known}), not {shown(value)}"
        )
    return value
