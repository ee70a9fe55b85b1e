"""``TURNSTATE["AGENTS"]``: the graphs and agents a project continues, by the name a pause records.

Resolving a name imports only what its dotted path names, so a framework is imported when a
pause of that framework comes (or when ``check`` looks), never when the app loads.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.utils.module_loading import import_string

from turnstate_app.conf import conf
from turnstate_app.errors import InteractionConfigurationError

FRAMEWORKS = {
    # the framework (the root package of the object's class, or "google.adk") -> (contrib app, extra)
    "langgraph": ("turnstate_app.contrib.langgraph", "langgraph"),
    "pydantic_ai": ("turnstate_app.contrib.pydantic_ai", "pydantic-ai"),
    "agents": ("turnstate_app.contrib.openai_agents", "openai-agents"),  # the OpenAI Agents SDK
    "google.adk": ("turnstate_app.contrib.google_adk", "google-adk"),  # Google's Agent Development Kit
}


def import_agent(name: str, path: Any) -> Any:
    """The object ``path`` names, or ``ImportError`` saying which entry and why."""
    if not isinstance(path, str) or "." not in path:
        raise ImportError(f"AGENTS[{name!r}] = {path!r} is not a dotted path")
    try:
        return import_string(path)
    except ImportError as exc:
        raise ImportError(f"AGENTS[{name!r}] = {path!r} does not import ({exc})") from exc
    except Exception as exc:  # the module's own code raised: still a wiring error, said as one
        raise ImportError(
            f"AGENTS[{name!r}] = {path!r} raised {type(exc).__name__} on import ({exc})"
        ) from exc


def name_of(target: Any) -> Any:
    """What the object calls itself (``graph.name`` / ``agent.name``); None when it has no name."""
    return getattr(target, "name", None)


SDK_AGENT_MODULE = "agents.agent"
"""Where the OpenAI Agents SDK defines ``Agent``: "agents" is a common name for a project's own
package, so for that root only the SDK's ``Agent`` (or a subclass) counts."""


ADK_TYPES = frozenset({("google.adk.apps.app", "App"), ("google.adk.agents.base_agent", "BaseAgent")})
"""Where Google ADK defines ``App`` and the base of its agents: "google" is the root of many
packages, so for ADK only these classes (or subclasses) count, found without importing ADK."""


def framework_of(target: Any) -> str | None:
    """The framework ("langgraph", "pydantic_ai", "agents", "google.adk") of the class (or a base)
    of ``target``."""
    for klass in type(target).__mro__:
        module = klass.__module__
        if (module, klass.__qualname__) in ADK_TYPES:
            return "google.adk"
        root = module.partition(".")[0]
        if root in FRAMEWORKS and (root != "agents" or module == SDK_AGENT_MODULE):
            return root
    return None


def agent_for(name: str) -> tuple[Any, str]:
    """The graph or agent ``AGENTS`` names ``name``, and the contrib app that continues it.

    ``InteractionConfigurationError`` (wiring) when there is no such entry, it does not import
    (its framework not installed), it is not a graph or agent of a supported framework, its
    own name differs, or its contrib app is not installed.
    """
    agents = conf.AGENTS
    if name not in agents:
        known = ", ".join(map(repr, agents)) or "none"
        raise InteractionConfigurationError(
            f"no TURNSTATE['AGENTS'] entry for {name!r} (entries: {known}): add "
            f"{name!r}: 'dotted.path.to.it'; nothing was claimed, and the pause is tried again"
        )
    try:
        target = import_agent(name, agents[name])
    except ImportError as exc:
        if exc.__cause__ is not None and not isinstance(exc.__cause__, ImportError):
            raise InteractionConfigurationError(
                f"{exc}: fix that module; nothing was claimed, and the pause is tried again"
            ) from exc
        raise InteractionConfigurationError(
            f"{exc}; is its framework installed (pip install 'turnstate-app[langgraph]', "
            "'turnstate-app[pydantic-ai]', 'turnstate-app[openai-agents]' or 'turnstate-app[google-adk]')? "
            "Nothing was claimed, and the pause is tried again"
        ) from exc
    if name_of(target) != name:
        raise InteractionConfigurationError(
            f"AGENTS[{name!r}] names an object called {name_of(target)!r}: the key must be its name"
        )
    framework = framework_of(target)
    if framework is None:
        raise InteractionConfigurationError(
            f"AGENTS[{name!r}] is a {type(target).__name__}, not a compiled LangGraph graph, "
            "a PydanticAI agent, an OpenAI Agents SDK agent or a Google ADK App or agent"
        )
    contrib, _extra = FRAMEWORKS[framework]
    if not apps.is_installed(contrib):
        raise InteractionConfigurationError(
            f"AGENTS[{name!r}] is a {framework} object, and {contrib!r} is not in INSTALLED_APPS"
        )
    return target, contrib
