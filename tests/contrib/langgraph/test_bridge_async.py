"""The async path end to end: paused with ``apause_interrupts``, answered through Django's ASGI
handler (``AsyncClient``), continued with ``acontinue_graph`` from the database alone."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from tests.contrib.langgraph.approvals import config, runs, trip_approvals
from tests.factories import UserFactory
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver, acontinue_graph, apause_interrupts
from turnstate_app.models import Pause
from turnstate_app.pauses import MintedPause, ResumedPause, rebuild_resumed
from turnstate_app.ports import get_default_store

pytestmark = pytest.mark.django_db(transaction=True)


async def answer_over_asgi(client: AsyncClient, minted: MintedPause, answer: Any) -> ResumedPause:
    response = await client.post(
        "/api/turnstate/pauses/resume/",
        {"token": minted.token, "answer": answer},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    pause = await Pause.objects.aget(jti=minted.claims.jti)
    return await sync_to_async(rebuild_resumed)(pause, get_default_store())  # as a worker would


async def test_paused_answered_under_asgi_and_continued_async_to_the_end() -> None:
    owner = await sync_to_async(UserFactory.create)()
    client = AsyncClient()
    await client.aforce_login(owner)  # type: ignore[arg-type]
    thread = f"trip-{uuid.uuid4().hex[:12]}"
    graph = trip_approvals(DjangoCheckpointSaver())
    await graph.ainvoke({"messages": [("user", "Book my trip.")], "log": []}, config(thread))

    minted = {
        m.claims.name: m
        for m in await apause_interrupts(graph, config(thread), run_id="r", session_id="s", owner=owner)
    }
    assert set(minted) == {"flights", "hotel"} and all(m.resumable for m in minted.values())
    assert await apause_interrupts(graph, config(thread), run_id="r", session_id="s") == []

    flights = await answer_over_asgi(client, minted["flights"], {"approved": True})
    first = await acontinue_graph(graph, flights)
    assert first.ran and first.minted == []  # the hotel's pause is still pending: not asked again

    hotel = await answer_over_asgi(client, minted["hotel"], {"approved": True})
    [seat] = (await acontinue_graph(graph, hotel)).minted
    [meal] = (await acontinue_graph(graph, await answer_over_asgi(client, seat, "window"))).minted
    meal_answer = await answer_over_asgi(client, meal, "none")
    done = await acontinue_graph(graph, meal_answer)

    assert done.ran and done.output["log"][-2:] == ["details:window,none", "booked"]
    again = await acontinue_graph(graph, meal_answer)
    assert (again.ran, again.reason) == (False, "already continued")
    owners = await sync_to_async(
        lambda: set(Pause.objects.filter(thread_id=thread).values_list("owner", flat=True))
    )()
    assert owners == {owner.pk}
    assert await sync_to_async(runs)(thread) == 4
