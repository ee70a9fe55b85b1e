"""The settings object, the default store, and the promise that the core imports no model."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from turnstate_app.conf import DEFAULTS, conf
from turnstate_app.errors import InteractionConfigurationError
from turnstate_app.ports import (
    InMemoryCheckpointCommandPort,
    ModelCheckpointCommandPort,
    get_default_store,
)


def test_defaults_are_the_documented_ones(turnstate_settings: Any) -> None:
    turnstate_settings.remove()
    assert conf.PORT == "turnstate_app.ports.ModelCheckpointCommandPort"
    assert conf.REQUIRE_DURABLE is True
    assert conf.TOKEN_MAX_AGE == 7 * 24 * 3600
    assert conf.MAX_VALUE_BYTES == 8 * 1024 * 1024
    assert conf.RESUME_HANDLER is None
    assert set(DEFAULTS) >= {
        "PORT",
        "REQUIRE_DURABLE",
        "TOKEN_MAX_AGE",
        "MAX_VALUE_BYTES",
        "RESUME_HANDLER",
    }


def test_conf_follows_overrides(turnstate_settings: dict[str, Any]) -> None:
    turnstate_settings["TOKEN_MAX_AGE"] = 60
    assert conf.TOKEN_MAX_AGE == 60
    assert DEFAULTS["MAX_VALUE_BYTES"] == conf.MAX_VALUE_BYTES


def test_default_store_uses_the_model_port(turnstate_settings: Any) -> None:
    turnstate_settings.replace({})
    store = get_default_store()
    assert isinstance(store.commands, ModelCheckpointCommandPort)
    assert get_default_store() is store


def test_default_store_is_rebuilt_when_settings_change(turnstate_settings: dict[str, Any]) -> None:
    turnstate_settings["REQUIRE_DURABLE"] = False
    before = get_default_store()
    turnstate_settings["PORT"] = "turnstate_app.ports.InMemoryCheckpointCommandPort"
    after = get_default_store()
    assert after is not before
    assert isinstance(after.commands, InMemoryCheckpointCommandPort)


class DefaultsReadWhileSwapped(Mapping[str, Any]):
    """The defaults, and a ``TURNSTATE`` replaced while they are merged with it: as another
    thread's ``override_settings`` would replace it between a reader's read and its cache write."""

    def __init__(self, swap: Callable[[], None]) -> None:
        self.swap: Callable[[], None] | None = swap

    def keys(self) -> Any:
        swap, self.swap = self.swap, None
        if swap is not None:
            swap()
        return DEFAULTS.keys()

    def __getitem__(self, key: str) -> Any:
        return DEFAULTS[key]

    def __iter__(self) -> Iterator[str]:
        return iter(DEFAULTS)

    def __len__(self) -> int:
        return len(DEFAULTS)


def swapping_defaults(monkeypatch: pytest.MonkeyPatch, swap: Callable[[], None]) -> None:
    monkeypatch.setattr("turnstate_app.conf.DEFAULTS", DefaultsReadWhileSwapped(swap))


def test_values_read_while_the_setting_is_replaced_are_not_kept(
    turnstate_settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    turnstate_settings.replace({"TOKEN_MAX_AGE": 60})
    swapping_defaults(monkeypatch, lambda: turnstate_settings.replace({"TOKEN_MAX_AGE": 120}))
    assert conf.TOKEN_MAX_AGE in (60, 120)  # read while replaced: either answer was true once
    assert conf.TOKEN_MAX_AGE == 120


def test_a_store_built_while_the_setting_is_replaced_is_not_kept(
    turnstate_settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    turnstate_settings.replace(
        {"PORT": "turnstate_app.ports.InMemoryCheckpointCommandPort", "REQUIRE_DURABLE": False}
    )
    swapping_defaults(monkeypatch, lambda: turnstate_settings.replace({}))
    get_default_store()
    assert isinstance(get_default_store().commands, ModelCheckpointCommandPort)


def test_volatile_port_is_refused_when_durability_is_required(
    turnstate_settings: dict[str, Any],
) -> None:
    turnstate_settings["PORT"] = "turnstate_app.ports.InMemoryCheckpointCommandPort"
    with pytest.raises(InteractionConfigurationError, match="volatile"):
        get_default_store()


CORE = [
    "turnstate_app.errors",
    "turnstate_app.checkpoints",
    "turnstate_app.contracts",
    "turnstate_app.turnstate",
    "turnstate_app.durability",
]


def test_the_core_imports_no_django_model_in_a_fresh_interpreter() -> None:
    script = (
        "import sys\n"
        f"for name in {CORE!r}: __import__(name)\n"
        "watched = ('django', 'turnstate_app.models', 'turnstate_app.ports')\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(watched))\n"
        "print(loaded)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]", result.stdout
