"""Keys, a key ring and a mint for the encryption tests (importable by spawned processes too)."""

from __future__ import annotations

import uuid
from typing import Any

from cryptography.fernet import Fernet

KEY_A = Fernet.generate_key().decode()
KEY_B = Fernet.generate_key().decode()
STANDARD_KEY = "oDKtL4dGKj1kTqslM1PnHq/OJ9H+kmds88tho3xWJXY="
"""32 bytes in standard base64 (``+``, ``/``): not a Fernet key, which is url-safe base64."""
SECRET = "s3cr3t-passport-X9Q7"
"""What a person told the agent; no encrypted column may hold it."""

RING: dict[str, list[str]] = {}
"""Per-thread keys for ``TURNSTATE["ENCRYPTION_KEY_RING"] = "tests.encryption_support.ring"``."""

DEPARTED = Fernet.generate_key().decode()
"""The key a tenant no longer in ``RING`` gets: one that never wrote anything (a ring always
returns keys, so dropping a tenant's keys means giving it a key that reads none of its rows)."""

GIVES: dict[str, Any] = {}
"""What ``tests.encryption_support.gives`` does for every thread: returns ``GIVES["keys"]``, or
raises ``GIVES["raises"]`` when that is set."""


def ring(thread_id: str) -> list[str]:
    return RING.get(thread_id.split("/")[0], [DEPARTED])


def gives(thread_id: str) -> Any:
    if "raises" in GIVES:
        raise GIVES["raises"]
    return GIVES["keys"]


def mint_secret(thread_id: str | None = None, *, secret: str = SECRET) -> Any:
    from turnstate_app.pauses import mint_pause

    return mint_pause(
        run_id="run",
        session_id="session",
        thread_id=thread_id or f"t-{uuid.uuid4().hex[:8]}",
        checkpoint_id="cp",
        scope_hash="scope",
        tool_call_id=f"call-{uuid.uuid4().hex[:8]}",
        request={"question": f"Is {secret} your passport?"},
        prompt=f"My passport is {secret}",
        messages=[{"role": "user", "content": secret}],
    )


def churn(
    settings_dict: dict[str, Any], keys: list[str], worker: int, tokens: list[str], rounds: int
) -> dict[str, Any]:
    """In a child process on ``keys``: answer ``tokens``, mint, and overwrite one sealed row, interleaved.

    Returns what it wrote: the threads it minted on, and the last value of its row.
    """
    import json

    from django.conf import settings

    from tests.processes import boot_django

    boot_django(settings_dict)
    settings.TURNSTATE = {"ENCRYPTION_KEYS": keys}
    from turnstate_app.pauses import resume_pause
    from turnstate_app.ports import ModelCheckpointCommandPort

    port = ModelCheckpointCommandPort()
    minted, value = [], ""
    for n in range(rounds):
        value = json.dumps({"worker": worker, "round": n, "note": SECRET})
        port.write_metadata_sync(
            thread_id=f"row-{worker}", checkpoint_id="cp", key="answer:churn", value=value, task_id=None
        )
        if n < len(tokens):
            resume_pause(tokens[n], {"worker": worker})
        if n % 4 == 0:
            minted.append(mint_secret(f"w{worker}-{n}").claims.thread_id)
    return {"minted": minted, "last": value}


def rotate_until_killed(settings_dict: dict[str, Any], keys: list[str], started: Any) -> None:
    """In a child process: rotate one row per batch, and after the third batch wait to be killed."""
    import time

    from django.conf import settings

    from tests.processes import boot_django

    boot_django(settings_dict)
    settings.TURNSTATE = {"ENCRYPTION_KEYS": keys}
    from turnstate_app.rotation import rotate
    from turnstate_app.sealed_tables import registered

    def progress(counts: Any) -> None:
        if counts.batches == 3:
            started.set()
            time.sleep(600)  # killed here, mid-run

    rotate(registered()[0], batch_size=1, progress=progress)
