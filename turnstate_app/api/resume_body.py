"""The resume endpoint's request and response bodies, without a serializer where one adds nothing.

An answer is on the person's critical path, and DRF's serializer machinery (building fields,
running validators, copying the result) costs more than checking two keys. A body that is
plainly valid (a JSON object whose ``token`` is a non-empty ASCII string without NUL and which
has an ``answer``) is taken as is: exactly what ``ResumeRequestSerializer`` would return for it.
Anything else goes through that serializer, so every refusal keeps its message and code. The
response is the three fields ``ResumedSerializer`` documents, in its order.
"""

from __future__ import annotations

import json
from typing import Any

from turnstate_app.api.serializers import ResumeRequestSerializer
from turnstate_app.models import PauseStatus
from turnstate_app.pauses import ResumedPause


def token_and_answer(data: Any) -> tuple[str, Any]:
    """The body's token and answer, as ``ResumeRequestSerializer`` validates them (its errors too)."""
    if type(data) is dict:
        token, answer = data.get("token"), data.get("answer", data)
        if (
            type(token) is str
            and token
            and token.isascii()  # no surrogate can be in it
            and "\x00" not in token
            and answer is not data
            and _is_json(answer)
        ):
            return token, answer
    body = ResumeRequestSerializer(data=data)
    body.is_valid(raise_exception=True)
    return body.validated_data["token"], body.validated_data["answer"]


def _is_json(value: Any) -> bool:
    """``serializers.JSONField``'s own check: the value serialises."""
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def resumed_body(resumed: ResumedPause) -> dict[str, Any]:
    """``ResumedSerializer(resumed).data``: the pause, ``answered``, and whether it can be continued."""
    return {"jti": resumed.claims.jti, "status": PauseStatus.ANSWERED.value, "resumable": resumed.resumable}
