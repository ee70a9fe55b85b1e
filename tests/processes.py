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


def resume_elsewhere(settings_dict: dict[str, Any], token: str, answer: Any) -> dict[str, Any]:
    """Answer a pause in a process that never saw it minted: only the database is shared."""
    boot_django(settings_dict)
    from turnstate_app.pauses import resume_pause

    resumed = resume_pause(token, answer)
    return {
        "pid": os.getpid(),
        "jti": resumed.claims.jti,
        "answer": resumed.answer,
        "checkpoint": None if resumed.checkpoint is None else resumed.checkpoint.encode(),
    }


def race_to_answer(
    settings_dict: dict[str, Any], token: str, worker: int, barrier: Any, results: Any
) -> None:
    """Wait for every racer, then answer; report which outcome this process saw."""
    boot_django(settings_dict)
    from django.db import connection

    from turnstate_app.errors import PauseAlreadyAnsweredError
    from turnstate_app.pauses import resume_pause

    connection.ensure_connection()
    barrier.wait()
    try:
        resume_pause(token, {"worker": worker})
        results.put((worker, "answered"))
    except PauseAlreadyAnsweredError:
        results.put((worker, "already_answered"))
    except Exception as exc:
        results.put((worker, f"{type(exc).__name__}: {exc}"))
    finally:
        connection.close()


def answer_and_report(settings_dict: dict[str, Any], token: str, answer: Any) -> str:
    """Answer once; report the outcome by name ("answered", "already_answered", or the error)."""
    boot_django(settings_dict)
    from django.db import connection

    from turnstate_app.errors import PauseAlreadyAnsweredError, PauseExpiredError
    from turnstate_app.pauses import resume_pause

    try:
        resume_pause(token, answer)
        return "answered"
    except PauseAlreadyAnsweredError:
        return "already_answered"
    except PauseExpiredError:
        return "expired"
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        connection.close()
