"""Work run in child processes (spawned: each a fresh interpreter with its own connection).

Kept in an importable module because spawn pickles functions by their module path.
"""

from __future__ import annotations

import os
from typing import Any


def boot_django(settings_dict: dict[str, Any]) -> None:
    """Set Django up in a child, pointed at the parent's (test) database."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django

    django.setup()
    from django.db import connections

    connections["default"].settings_dict.update(settings_dict)


def claim_keys(settings_dict: dict[str, Any], worker: int, keys: list[str]) -> list[tuple[str, bool | str]]:
    """Claim every key once; report (key, won) or (key, error text)."""
    boot_django(settings_dict)
    from turnstate_app.ports import ModelCheckpointCommandPort

    port = ModelCheckpointCommandPort()
    results: list[tuple[str, bool | str]] = []
    for key in keys:
        try:
            won = port.claim_metadata_sync(
                thread_id="race",
                checkpoint_id="cp",
                key=key,
                value=f"worker-{worker}",
                task_id=str(worker),
            )
            results.append((key, won))
        except Exception as exc:  # reported to the parent, which asserts there were none
            results.append((key, f"{type(exc).__name__}: {exc}"))
    return results


def overwrite_keys(settings_dict: dict[str, Any], worker: int, keys: list[str], rounds: int) -> list[str]:
    """Overwrite every key ``rounds`` times; return the error texts (expected: none)."""
    boot_django(settings_dict)
    from turnstate_app.ports import ModelCheckpointCommandPort

    port = ModelCheckpointCommandPort()
    errors: list[str] = []
    for round_number in range(rounds):
        for key in keys:
            try:
                port.write_metadata_sync(
                    thread_id="race",
                    checkpoint_id="cp",
                    key=key,
                    value=f'{{"worker": {worker}, "round": {round_number}}}',
                    task_id=str(worker),
                )
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
    return errors
