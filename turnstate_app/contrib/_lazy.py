"""Lazy public names for an integration package, so importing it never imports its framework.

A contrib package is imported early (a settings module, an ``AppConfig``), before the app
registry is ready and whether or not its framework is installed. Its public names therefore
load on first use, through the module's ``__getattr__`` (PEP 562), and are cached in the
module afterwards. The core never imports this module: it is the integrations' own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(
    namespace: dict[str, Any], exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return the ``__getattr__`` and ``__dir__`` of the package whose ``globals()`` is *namespace*.

    *exports* maps each public name to the dotted path of the module that defines it.
    """

    def __getattr__(name: str) -> Any:  # noqa: N807 - the module hook's own name
        module_path = exports.get(name)
        if module_path is None:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        value = getattr(import_module(module_path), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:  # noqa: N807
        return sorted([*namespace, *namespace["__all__"]])

    return __getattr__, __dir__
