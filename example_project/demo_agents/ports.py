"""A demo-only port whose turn-state writes fail, as a database having a bad moment would.

The app has no fault switch; this subclass exists so the demo can show a pause that is
honestly unresumable.
"""

from __future__ import annotations

from typing import Any

from turnstate_app.ports import ModelCheckpointCommandPort


class TurnStateWriteFailsPort(ModelCheckpointCommandPort):
    def write_metadata_sync(self, **kwargs: Any) -> None:
        if kwargs["key"].startswith("turn_state:"):
            raise ConnectionError("simulated: the database dropped the connection")
        super().write_metadata_sync(**kwargs)
