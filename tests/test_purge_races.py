"""Purge against a concurrent mint on the same request key (a retried tool call).

The two pauses share ``ask_user_request:<id>``. The old, settled one is purged while the
new one is minted: whichever commits first, the new pending pause keeps its request row.
The mint is run from a second thread (its own connection) at the exact point where the
purge has read its batch and not yet deleted anything.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connections

from tests.pause_helpers import age, answered, mint
from turnstate_app import retention
from turnstate_app.models import CheckpointMetadata, Pause
from turnstate_app.pauses import resume_pause
from turnstate_app.retention import purge_pauses

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_pause_minted_on_the_same_request_key_during_a_purge_keeps_its_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    old = answered(1, tool_call_id="call-retried", thread_id="thread-1")
    age(old, 40)
    minted: list[Any] = []

    def mint_meanwhile() -> None:
        try:
            minted.append(mint(2, tool_call_id="call-retried", thread_id="thread-1"))
        finally:
            connections.close_all()

    original = retention.rows_of

    def rows_of_after_a_concurrent_mint(*args: Any, **kwargs: Any) -> Any:
        racer = threading.Thread(target=mint_meanwhile)
        racer.start()
        racer.join(timeout=2)  # commits now, or waits on this purge's locks until it commits
        try:
            return original(*args, **kwargs)
        finally:
            rows_of_after_a_concurrent_mint.racer = racer  # type: ignore[attr-defined]

    monkeypatch.setattr(retention, "rows_of", rows_of_after_a_concurrent_mint)
    result = purge_pauses(Pause.objects.purgeable(retention_cutoff()))
    rows_of_after_a_concurrent_mint.racer.join(timeout=30)  # type: ignore[attr-defined]

    assert result.pauses == 1
    [new] = minted
    assert list(Pause.objects.values_list("jti", flat=True)) == [new.claims.jti]
    request = CheckpointMetadata.objects.filter(thread_id="thread-1", key="ask_user_request:call-retried")
    assert request.exists()
    resumed = resume_pause(new.token, "still answerable")
    assert resumed.checkpoint is not None


def retention_cutoff() -> Any:
    from datetime import timedelta

    from django.utils import timezone

    return timezone.now() - timedelta(days=30)
