"""Users, clients and pauses for the REST API tests (``tests/test_api_*.py``)."""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.test import APIClient

from turnstate_app.checkpoints import payload_key
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pauses import MintedPause, mint_pause
from turnstate_app.turnstate import turn_state_key

API = "/api/turnstate/"
PAUSES = f"{API}pauses/"
RESUME = f"{PAUSES}resume/"
UNRESUMABLE = f"{PAUSES}unresumable/"
CHECKPOINTS = f"{API}checkpoints/"

_numbers = itertools.count(1)


def pause_url(jti: str) -> str:
    return f"{PAUSES}{jti}/"


def checkpoint_url(row_id: int | str) -> str:
    return f"{CHECKPOINTS}{row_id}/"


def mint(*, owner: Any = None, **overrides: Any) -> MintedPause:
    """A real pause through the lifecycle: request row, turn state, ledger row, token."""
    n = next(_numbers)
    fields: dict[str, Any] = {
        "run_id": f"run-{n}",
        "session_id": "session-1",
        "thread_id": f"thread-{n}",
        "checkpoint_id": "cp-1",
        "scope_hash": "scope-1",
        "tool_call_id": f"call-{n}",
        "name": "ask_user",
        "request": {"question": "Which date?"},
        "prompt": "Book me a flight to Lisbon.",
        "messages": [{"role": "user", "content": "Book me a flight to Lisbon."}],
        "owner": owner,
    }
    fields.update(overrides)
    return mint_pause(**fields)


def ledger_row(*, owner: Any = None, **overrides: Any) -> Pause:
    """A ledger row alone (no store rows): cheap, for lists and pagination."""
    n = next(_numbers)
    fields: dict[str, Any] = {
        "jti": f"jti-{n}",
        "run_id": f"run-{n}",
        "session_id": "session-1",
        "thread_id": f"thread-{n}",
        "checkpoint_id": "cp-1",
        "scope_hash": "scope-1",
        "tool_call_id": f"call-{n}",
        "request_key": f"ask_user_request:call-{n}",
        "resumable": True,
        "owner": owner,
        "expires_at": timezone.now() + timedelta(days=1),
    }
    fields.update(overrides)
    pause: Pause = Pause.objects.create(**fields)
    return pause


def lose_turn_state(minted: MintedPause) -> None:
    CheckpointMetadata.objects.filter(key=turn_state_key(minted.claims)).delete()


def legacy_request(thread_id: str) -> CheckpointMetadata:
    """A request row no ledger pause owns (written by a build that kept no ledger)."""
    row: CheckpointMetadata = CheckpointMetadata.objects.create(
        thread_id=thread_id, checkpoint_id="cp-1", key="interrupt_payload:int-1", value="{}"
    )
    return row


def request_row(minted: MintedPause) -> CheckpointMetadata:
    row: CheckpointMetadata = CheckpointMetadata.objects.get(
        thread_id=minted.claims.thread_id, key=payload_key(minted.claims)
    )
    return row


def snapshot() -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    """Everything a request could have written: ledger statuses and store rows."""
    pauses = sorted(Pause.objects.values_list("jti", "status"))
    rows = sorted(CheckpointMetadata.objects.values_list("thread_id", "key", "value"))
    return pauses, rows


def walk(client: APIClient, url: str) -> list[dict[str, Any]]:
    """Every row of a cursor-paginated list, following ``next`` to the end."""
    rows: list[dict[str, Any]] = []
    next_url: str | None = url
    while next_url:
        response = client.get(next_url)
        assert response.status_code == 200, response.content
        rows += response.json()["results"]
        next_url = response.json()["next"]
    return rows


@pytest.fixture
def users() -> dict[str, Any]:
    model = get_user_model()  # no passwords: hashing one costs more than a whole test
    return {
        "owner": model.objects.create_user("owner"),
        "other": model.objects.create_user("other"),
        "staff": model.objects.create_user("staff", is_staff=True),
    }


def client_for(user: Any = None) -> APIClient:
    """A client logged in through the project's own (session) authentication, or anonymous."""
    client = APIClient()
    if user is not None:
        client.force_login(user)
    return client
