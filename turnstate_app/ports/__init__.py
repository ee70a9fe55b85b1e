"""Ports a :class:`~turnstate_app.turnstate.TurnCheckpointStore` can be wired with."""

from turnstate_app.ports.default import get_default_store
from turnstate_app.ports.memory import InMemoryCheckpointCommandPort
from turnstate_app.ports.model import ModelCheckpointCommandPort

__all__ = ["InMemoryCheckpointCommandPort", "ModelCheckpointCommandPort", "get_default_store"]
