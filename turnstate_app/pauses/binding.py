"""What was shown and what was answered, bound to their pause by MACs keyed from ``SECRET_KEY``.

The ledger and the store may be written by someone who does not hold ``SECRET_KEY`` (a leaked
database password, a restored backup, an operator's mistake). A plain digest of the question
can be recomputed after editing it, and an answer row can be rewritten from a rejection to an
approval. So each pause keeps two MACs, each over its identity (jti, thread, checkpoint):

- ``shown_digest``: over the SHA-256 of what the person was shown (:mod:`turnstate_app.pauses.shown`),
  written at mint; keying the plain digest rather than the text lets the pauses recorded before
  (plain digests only) be keyed in place by a migration, whatever a bridge showed for them;
- ``answer_mac``: over the answer as stored, written by the very UPDATE that consumes the pause.

Both are ``salted_hmac`` (SHA-256) hex, made with ``SECRET_KEY`` and verified under it and each of
``SECRET_KEY_FALLBACKS``, as Django's signing is, so keys can be rotated without refusing a pause.
A missing MAC never verifies: whoever can write the database cannot switch the check off.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.utils.crypto import constant_time_compare, salted_hmac

SHOWN_SALT = "turnstate_app.binding.shown"
ANSWER_SALT = "turnstate_app.binding.answer"


def _mac(salt: str, jti: str, thread_id: str, checkpoint_id: str, value: str, secret: Any) -> str:
    # One JSON array: no choice of ids and value can read as another's.
    message = json.dumps([jti, thread_id, checkpoint_id, value], ensure_ascii=False, separators=(",", ":"))
    return salted_hmac(salt, message, secret=secret, algorithm="sha256").hexdigest()


def _secrets() -> Iterator[Any]:
    yield settings.SECRET_KEY
    yield from settings.SECRET_KEY_FALLBACKS


def _verifies(salt: str, recorded: str | None, identity: tuple[str, str, str], value: str) -> bool:
    if not recorded:
        return False
    return any(constant_time_compare(recorded, _mac(salt, *identity, value, key)) for key in _secrets())


def identity_of(row: Any) -> tuple[str, str, str]:
    """``(jti, thread_id, checkpoint_id)`` of a pause's claims or ledger row."""
    return (row.jti, row.thread_id, row.checkpoint_id)


def shown_mac(identity: tuple[str, str, str], digest: str) -> str:
    """The MAC under ``SECRET_KEY`` of the plain digest (hex SHA-256) of what was shown."""
    return _mac(SHOWN_SALT, *identity, digest, settings.SECRET_KEY)


def shown_verifies(recorded: str | None, identity: tuple[str, str, str], digest: str) -> bool:
    """Whether ``recorded`` is the MAC of ``digest`` under ``SECRET_KEY`` or a fallback (None: never)."""
    return _verifies(SHOWN_SALT, recorded, identity, digest)


def answer_mac(identity: tuple[str, str, str], answer_value: str) -> str:
    """The MAC under ``SECRET_KEY`` of the answer as stored (its JSON text)."""
    return _mac(ANSWER_SALT, *identity, answer_value, settings.SECRET_KEY)


def answer_verifies(recorded: str | None, identity: tuple[str, str, str], answer_value: str) -> bool:
    """Whether ``recorded`` is the MAC of ``answer_value`` under ``SECRET_KEY`` or a fallback
    (None: never)."""
    return _verifies(ANSWER_SALT, recorded, identity, answer_value)


def answer_changed(jti: str) -> str:
    """The refusal's reason when the stored answer is not the one given."""
    return (
        f"pause {jti}: the answer changed since it was given (its stored answer does not match the "
        "record made when it was given); nothing was run"
    )
