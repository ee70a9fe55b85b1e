"""URLs, clients and readers for the REST API tests (``tests/test_api_*.py``); pauses come from
:mod:`tests.pause_helpers` and :mod:`tests.factories`, users from ``conftest``."""

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from turnstate_app.checkpoints import payload_key
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pauses import MintedPause

API = "/api/turnstate/"
PAUSES = f"{API}pauses/"
RESUME = f"{PAUSES}resume/"
UNRESUMABLE = f"{PAUSES}unresumable/"
CHECKPOINTS = f"{API}checkpoints/"


def pause_url(jti: str) -> str:
    return f"{PAUSES}{jti}/"


def checkpoint_url(row_id: int | str) -> str:
    return f"{CHECKPOINTS}{row_id}/"


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


def client_for(user: Any = None) -> APIClient:
    """A client logged in through the project's own (session) authentication, or anonymous."""
    client = APIClient()
    if user is not None:
        client.force_login(user)
    return client
