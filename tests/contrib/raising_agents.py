"""An ``AGENTS`` module whose own code raises on import, and not an ``ImportError``: a wiring
fault ``continue_pause`` must report as one (``tests/contrib/test_continue_pause.py``)."""

from __future__ import annotations

raise RuntimeError("the agents module could not start: BOOKING_API_KEY is not set")
