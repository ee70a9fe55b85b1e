"""Sent once per event, after the transaction that recorded it commits."""

from django.dispatch import Signal

pause_minted = Signal()
"""Sent with ``minted`` (a :class:`MintedPause`) and ``pause`` (the ledger row)."""

pause_answered = Signal()
"""Sent with ``resumed`` (a :class:`ResumedPause`)."""
