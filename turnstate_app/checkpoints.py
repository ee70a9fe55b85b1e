"""The frozen compatibility keys a pause writes its request under.

Tokens in flight point at these keys, so they never change. New kinds of rows get
new prefixes instead; every prefix is declared in :mod:`turnstate_app.keys`.
"""

from __future__ import annotations

from turnstate_app.keys import (
    ANSWER_KEY_PREFIX,
    ASK_USER_REQUEST_KEY_PREFIX,
    INTERRUPT_PAYLOAD_KEY_PREFIX,
    REQUEST_KEY_PREFIXES,
    answer_key,
    payload_key,
)

__all__ = [
    "ANSWER_KEY_PREFIX",
    "ASK_USER_REQUEST_KEY_PREFIX",
    "INTERRUPT_PAYLOAD_KEY_PREFIX",
    "REQUEST_KEY_PREFIXES",
    "answer_key",
    "payload_key",
]
