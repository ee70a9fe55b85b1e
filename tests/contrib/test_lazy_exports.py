"""Every integration's public names load on first use, from the module that defines them, once."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

PACKAGES = [
    "turnstate_app.contrib.langgraph",
    "turnstate_app.contrib.pydantic_ai",
    "turnstate_app.contrib.openai_agents",
]


@pytest.fixture(params=PACKAGES)
def package(request: pytest.FixtureRequest) -> ModuleType:
    return importlib.import_module(request.param)


def test_every_public_name_is_the_defining_module_s_object(package: ModuleType) -> None:
    exports = package._EXPORTS
    assert sorted(exports) == sorted(package.__all__)
    for name, module_path in exports.items():
        assert getattr(package, name) is getattr(importlib.import_module(module_path), name)


def test_a_loaded_name_is_kept_in_the_package(package: ModuleType) -> None:
    name = package.__all__[0]
    package.__dict__.pop(name, None)
    value = getattr(package, name)
    assert package.__dict__[name] is value


def test_an_unknown_name_is_an_attribute_error_naming_the_package(package: ModuleType) -> None:
    with pytest.raises(AttributeError, match=rf"module '{package.__name__}' has no attribute 'nothing_here'"):
        package.nothing_here  # noqa: B018


def test_dir_lists_the_public_names(package: ModuleType) -> None:
    assert set(package.__all__) <= set(dir(package))
