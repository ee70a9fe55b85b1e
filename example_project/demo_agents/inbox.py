"""Delivering tokens: every minted pause lands in its owner's inbox (``pause_minted``).

A pause minted by a continuation on the worker reaches the person this way too: the
worker has no one to hand the token to, the inbox keeps it for the front end.
"""

from __future__ import annotations

import json
from typing import Any

from turnstate_app.pauses import MintedPause


def keep_token(sender: Any, minted: MintedPause, pause: Any, **_: Any) -> None:
    from demo_agents.models import Question
    from turnstate_app.models import CheckpointMetadata

    request = (
        CheckpointMetadata.objects.filter(
            thread_id=pause.thread_id, checkpoint_id=pause.checkpoint_id, key=pause.request_key
        )
        .values_list("value", flat=True)
        .first()
    )
    Question.objects.get_or_create(
        jti=minted.claims.jti,
        defaults={
            "token": minted.token,
            "owner_id": pause.owner_id,
            "thread_id": pause.thread_id,
            "name": pause.name or "",
            "request": json.loads(request) if request else {},
        },
    )
