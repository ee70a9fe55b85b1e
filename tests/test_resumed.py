"""``resumed(jti)``: from a jti to what a continuation needs, rebuilt from the database alone."""

from __future__ import annotations

import pytest

from tests.pause_helpers import mint
from turnstate_app.errors import PauseCheckpointNotFoundError, PauseNotAnsweredError, TurnStateError
from turnstate_app.pauses import aresumed, resume_pause, resumed

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_answered_pause_is_rebuilt_with_its_answer_and_turn() -> None:
    minted = mint()
    answered = resume_pause(minted.token, {"week": "May 4"})
    assert resumed(minted.claims.jti) == answered


async def test_the_async_twin_rebuilds_it_too() -> None:
    from asgiref.sync import sync_to_async

    minted = await sync_to_async(mint)()
    answered = await sync_to_async(resume_pause)(minted.token, "yes")
    assert await aresumed(minted.claims.jti) == answered


def test_no_such_pause_is_not_found() -> None:
    with pytest.raises(PauseCheckpointNotFoundError, match="no pause 'nope'"):
        resumed("nope")


def test_a_pending_pause_is_not_answered_yet() -> None:
    minted = mint()
    with pytest.raises(PauseNotAnsweredError, match="is pending, not answered") as raised:
        resumed(minted.claims.jti)
    assert isinstance(raised.value, TurnStateError)
