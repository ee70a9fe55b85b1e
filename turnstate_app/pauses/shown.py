"""An answer binds to the question the person saw: one digest of what they were shown.

At mint a pause records a MAC of the digest of what is shown (``shown``, by default its
request; :mod:`turnstate_app.pauses.binding`); at continuation the caller says what the stored
state asks now (``still_shown``) and the continuation runs only when its digest verifies against
that MAC. The digest is SHA-256 of canonical JSON: keys sorted, no whitespace, so key order and
spacing never count as a change.

Every bridge (LangGraph interrupts and reviews, PydanticAI deferred calls) and every
hand-written integration uses this one rule.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from turnstate_app.errors import CheckpointFieldError

DIGEST_SHOWN = 12
"""How many characters of each digest a refusal shows."""


def shown_digest(value: Any) -> str:
    """The SHA-256 (hex) of ``value`` as canonical JSON; ``TypeError``/``ValueError`` when it is not JSON."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def digest_at_mint(shown: Any) -> str:
    """:func:`shown_digest` at mint, refusing a value that is not JSON before anything is written."""
    try:
        return shown_digest(shown)
    except (TypeError, ValueError) as exc:
        raise CheckpointFieldError("shown", f"is not JSON-serialisable ({exc})") from None


def question_changed(jti: str, recorded: str, current: str) -> str:
    """The refusal's reason: the question changed since it was asked, with both MACs' first characters."""
    return (
        f"pause {jti}: the question changed since it was asked (shown {recorded[:DIGEST_SHOWN]}, "
        f"now {current[:DIGEST_SHOWN]}); nothing was run"
    )


def shown_unrecorded(jti: str) -> str:
    """The refusal's reason when the pause holds no record of what was shown: nothing to verify against."""
    return (
        f"pause {jti}: no record of what was shown is kept with it, so the question cannot be "
        "confirmed; nothing was run"
    )
