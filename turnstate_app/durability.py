"""Refuse, at construction, a deployment that could not keep its pauses."""

from __future__ import annotations

from typing import Any

from turnstate_app.errors import InteractionConfigurationError


def require_durable_consumption(commands: Any) -> None:
    """Raise unless ``commands`` is a port whose writes survive a restart.

    Found at start-up, a volatile port is a configuration fix; found when a person
    answers, it is a lost turn.
    """
    if commands is None:
        raise InteractionConfigurationError(
            "durability is required but no checkpoint port is wired; set TURNSTATE['PORT'] to a durable port"
        )
    if getattr(commands, "durable", False) is not True:
        raise InteractionConfigurationError(
            f"durability is required but {type(commands).__name__} is volatile "
            "(durable=False): its pauses would not survive a restart; wire a durable "
            "port or set TURNSTATE['REQUIRE_DURABLE'] = False"
        )
