"""Real graphs pause on the saver and continue from it, also after pruning."""

from __future__ import annotations

import uuid

import pytest
from langgraph.types import Command

from tests.contrib.langgraph.graphs import config, trip_graph
from turnstate_app.contrib.langgraph import DjangoCheckpointSaver
from turnstate_app.contrib.langgraph.models import Checkpoint

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_graph_pauses_and_a_new_saver_continues_it() -> None:
    thread = f"trip-{uuid.uuid4()}"
    first = trip_graph(DjangoCheckpointSaver()).invoke({"transcript": []}, config(thread))
    [pending] = first["__interrupt__"]
    assert pending.value == {"question": "Which date suits you?"}

    # Another saver object (as in another process): everything comes from the database.
    graph = trip_graph(DjangoCheckpointSaver())
    assert [i.id for i in graph.get_state(config(thread)).interrupts] == [pending.id]
    done = graph.invoke(Command(resume={pending.id: "Monday"}), config(thread))
    assert done["transcript"] == ["planned", "answered Monday", "booked for Monday"]
    assert graph.get_state(config(thread)).interrupts == ()


async def test_the_async_path_pauses_and_continues() -> None:
    thread = f"trip-{uuid.uuid4()}"
    graph = trip_graph(DjangoCheckpointSaver())
    first = await graph.ainvoke({"transcript": []}, config(thread))
    [pending] = first["__interrupt__"]
    done = await trip_graph(DjangoCheckpointSaver()).ainvoke(
        Command(resume={pending.id: "Tuesday"}), config(thread)
    )
    assert done["transcript"][-1] == "booked for Tuesday"


def test_prune_keep_latest_while_an_interrupt_is_pending_then_the_run_continues() -> None:
    thread = f"trip-{uuid.uuid4()}"
    saver = DjangoCheckpointSaver()
    graph = trip_graph(saver)
    [pending] = graph.invoke({"transcript": []}, config(thread))["__interrupt__"]
    before = Checkpoint.objects.filter(thread_id=thread).count()

    saver.prune([thread], strategy="keep_latest")

    assert before > 1
    assert Checkpoint.objects.filter(thread_id=thread).count() == 1
    assert [i.id for i in graph.get_state(config(thread)).interrupts] == [pending.id]
    done = graph.invoke(Command(resume={pending.id: "Friday"}), config(thread))
    assert done["transcript"] == ["planned", "answered Friday", "booked for Friday"]
