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


def answer_and_name(settings_dict: dict[str, Any], token: str, answer: Any) -> str:
    """Answer once; report "answered" or the error's class name."""
    boot_django(settings_dict)
    from django.db import connection

    from turnstate_app.pauses import resume_pause

    try:
        resume_pause(token, answer)
        return "answered"
    except Exception as exc:
        return type(exc).__name__
    finally:
        connection.close()


def answer_over_rest(settings_dict: dict[str, Any], token: str, answer: Any) -> tuple[int, Any]:
    """Answer once through the REST endpoint, as a user of its own; report (status, body)."""
    boot_django(settings_dict)
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from rest_framework.test import APIClient

    settings.ALLOWED_HOSTS = ["testserver"]  # as pytest-django sets it in the parent
    try:
        client = APIClient()
        client.force_login(get_user_model().objects.create_user(f"rest-{os.getpid()}"))
        response = client.post(
            "/api/turnstate/pauses/resume/", {"token": token, "answer": answer}, format="json"
        )
        return response.status_code, response.json()
    finally:
        connection.close()


def erase_thread_elsewhere(settings_dict: dict[str, Any], thread_id: str) -> str:
    """``erase_thread`` in a process of its own; "erased" or the error."""
    boot_django(settings_dict)
    from django.db import connection

    from turnstate_app.retention import erase_thread

    try:
        erase_thread(thread_id)
        return "erased"
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        connection.close()


def delete_user_elsewhere(settings_dict: dict[str, Any], user_pk: Any) -> str:
    """Delete a user (and so, through pre_delete, their pauses); "deleted" or the error."""
    boot_django(settings_dict)
    from django.contrib.auth import get_user_model
    from django.db import connection

    try:
        get_user_model().objects.get(pk=user_pk).delete()
        return "deleted"
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        connection.close()


def expire_elsewhere(settings_dict: dict[str, Any], jti: str, now_iso: str) -> int | str:
    """``PauseQuerySet.expire`` at ``now_iso`` for one pause; how many it changed, or the error."""
    boot_django(settings_dict)
    from datetime import datetime

    from django.db import connection

    from turnstate_app.models import Pause

    try:
        return Pause.objects.expire(now=datetime.fromisoformat(now_iso), jti=jti)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        connection.close()


def expire_command_elsewhere(settings_dict: dict[str, Any]) -> str:
    """``manage.py turnstate_expire``; its output, or the error."""
    boot_django(settings_dict)
    from io import StringIO

    from django.core.management import call_command
    from django.db import connection

    out = StringIO()
    try:
        call_command("turnstate_expire", stdout=out)
        return out.getvalue()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        connection.close()


def purge_pausing_after_the_decision(
    settings_dict: dict[str, Any], cutoff_iso: str, decided: Any, go: Any, results: Any
) -> None:
    """Purge settled pauses quiet since ``cutoff_iso``, stopping once it has decided which request
    rows are still shared (``decided`` is set) until ``go`` is set. Reports the pauses purged."""
    boot_django(settings_dict)
    from datetime import datetime

    from django.db import connection

    from turnstate_app import retention
    from turnstate_app.models import Pause

    decide = retention.still_shared

    def decided_then_wait(*args: Any, **kwargs: Any) -> Any:
        shared = decide(*args, **kwargs)
        decided.set()
        go.wait(60)
        return shared

    retention.still_shared = decided_then_wait
    try:
        result = retention.purge_pauses(Pause.objects.purgeable(datetime.fromisoformat(cutoff_iso)))
        results.put(("purged", result.pauses))
    except Exception as exc:
        results.put(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        decided.set()
        connection.close()


def continue_traced_elsewhere(settings_dict: dict[str, Any], jti: str) -> list[dict[str, Any]]:
    """In a fresh process with its own tracer: continue the answered pause ``jti`` (rebuilt from
    the store alone) and report the spans this process recorded, with their links."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    trace.set_tracer_provider(provider)
    boot_django(settings_dict)
    from turnstate_app.pauses import continue_once, resumed

    result = continue_once(resumed(jti), lambda continuation: "continued")
    assert result.ran, result.reason
    return [
        {
            "name": span.name,
            "trace_id": span.context.trace_id,
            "attributes": dict(span.attributes or {}),
            "links": [(link.context.trace_id, link.context.span_id) for link in span.links],
        }
        for span in spans.get_finished_spans()
    ]
