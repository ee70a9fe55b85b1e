"""``resumable`` as the integration's own store earns it: ``mint_pause(..., resumable_check=...)``."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from tests.pause_helpers import amint, mint
from turnstate_app.contracts import PauseClaims
from turnstate_app.models import Pause

pytestmark = pytest.mark.django_db


def test_the_check_decides_resumable_after_the_record_landed() -> None:
    asked: list[tuple[str, bool]] = []

    def check(claims: PauseClaims) -> bool:
        # Asked once the turn state is there: the ledger row is not written yet.
        asked.append((claims.jti, Pause.objects.filter(jti=claims.jti).exists()))
        return claims.tool_call_id == "call-yes"

    yes = mint(tool_call_id="call-yes", resumable_check=check)
    no = mint(tool_call_id="call-no", resumable_check=check)
    assert (yes.resumable, no.resumable) == (True, False)
    assert asked == [(yes.claims.jti, False), (no.claims.jti, False)]
    assert dict(Pause.objects.values_list("jti", "resumable")) == {yes.claims.jti: True, no.claims.jti: False}


def test_a_raising_check_records_not_resumable_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    def check(claims: PauseClaims) -> bool:
        raise ConnectionError("the framework's store is down")

    with caplog.at_level(logging.WARNING, logger="turnstate_app.pauses.earned"):
        minted = mint(resumable_check=check)
    assert minted.resumable is False
    assert Pause.objects.get(jti=minted.claims.jti).resumable is False
    [record] = [r for r in caplog.records if r.name == "turnstate_app.pauses.earned"]
    assert minted.claims.jti in record.getMessage() and "ConnectionError" in record.getMessage()
    assert record.exc_info is None  # the failure by its class and frames, never its message


def test_the_check_is_not_asked_when_the_record_failed() -> None:
    asked: list[Any] = []

    def check(claims: PauseClaims) -> bool:
        asked.append(claims)
        return True

    minted = mint(failing=True, resumable_check=check)
    assert minted.resumable is False and asked == []


@pytest.mark.django_db(transaction=True)
async def test_an_async_check_is_awaited_not_taken_for_a_yes() -> None:
    async def check(claims: PauseClaims) -> bool:
        await asyncio.sleep(0)
        return claims.tool_call_id == "call-yes"

    yes = await amint(tool_call_id="call-yes", resumable_check=check)
    no = await amint(tool_call_id="call-no", resumable_check=check)
    assert (yes.resumable, no.resumable) == (True, False)
