"""The core stands without any framework, and the integrations' tests cannot be skipped quietly."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORKS = ("langgraph", "langchain_core", "pydantic_ai", "agents", "openai", "google.adk")
"""The integrations' frameworks and what they bring (LangChain Core, OpenAI's client)."""

BLOCKER = textwrap.dedent(
    """
    import sys

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("langgraph", "langchain_core", "pydantic_ai", "agents", "openai"):
                raise ModuleNotFoundError(f"blocked: {name}")
            return None

    sys.meta_path.insert(0, Blocker())
    import os
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    import django
    from django.conf import settings

    # The test settings without the integration.
    apps = [a for a in settings.INSTALLED_APPS if not a.startswith("turnstate_app.contrib.")]
    settings.INSTALLED_APPS = apps
    django.setup()
    import turnstate_app.pauses, turnstate_app.models, turnstate_app.retention, turnstate_app.admin
    import turnstate_app.tasks, turnstate_app.handoff  # the task imports a framework when a pause comes
    import turnstate_app.contrib.langgraph  # the package itself loads lazily
    import turnstate_app.contrib.pydantic_ai  # so does this one
    import turnstate_app.contrib.openai_agents  # and this one
    frameworks = ("langgraph", "langchain_core", "pydantic_ai", "agents", "openai")
    assert not [m for m in sys.modules if m.split(".")[0] in frameworks]
    print("core imported without LangGraph")
    """
)


def test_the_core_imports_with_langgraph_blocked() -> None:
    result = subprocess.run(
        [sys.executable, "-c", BLOCKER], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "core imported without LangGraph" in result.stdout


def test_the_blocker_does_block() -> None:
    code = BLOCKER.replace("import turnstate_app.contrib.langgraph", "import langgraph.graph")
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode != 0 and "blocked: langgraph" in result.stderr


def test_a_skipped_integration_test_fails_the_run(tmp_path: Path) -> None:
    contrib = tmp_path / "contrib"
    contrib.mkdir()
    (contrib / "test_skipping.py").write_text("import pytest\n\ndef test_a():\n    pytest.skip('no extra')\n")
    (tmp_path / "test_elsewhere.py").write_text(
        "import pytest\n\ndef test_b():\n    pytest.skip('fine here')\n"
    )
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:django",
        "-p",
        "tests.contrib.skipguard",
        "-p",
        "no:cacheprovider",
    ]
    env_path = {"PYTHONPATH": str(ROOT)}
    import os

    env = {**os.environ, **env_path}
    both = subprocess.run(
        [*command, str(tmp_path)], cwd=tmp_path, capture_output=True, text=True, env=env, check=False
    )
    assert both.returncode == pytest.ExitCode.TESTS_FAILED, both.stdout
    assert "integration tests skipped" in both.stdout
    elsewhere = subprocess.run(
        [*command, str(tmp_path / "test_elsewhere.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert elsewhere.returncode == pytest.ExitCode.OK, elsewhere.stdout


def test_the_langgraph_package_imports_before_the_app_registry_is_ready() -> None:
    code = textwrap.dedent(
        """
        import os
        os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
        import turnstate_app.contrib.langgraph as lg  # as a settings module or an AppConfig would
        from django.apps import apps
        assert not apps.ready
        import django
        django.setup()
        print(type(lg.DjangoCheckpointSaver()).__name__)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("DjangoCheckpointSaver")


def test_starting_django_with_every_integration_installed_imports_no_framework() -> None:
    """Every process of a host (a worker, ``manage.py migrate``, each command) loads the apps'
    models and admin modules; a framework is imported when its integration first runs, so the
    contribs cost a process that never uses them nothing at start-up (PydanticAI alone took
    about half a second of it)."""
    code = textwrap.dedent(
        """
        import os, sys
        os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
        import django
        from django.conf import settings
        django.setup()
        from django.apps import apps
        from django.contrib import admin
        from django.core.management import get_commands, load_command_class
        contribs = [c for c in apps.get_app_configs() if c.name.startswith("turnstate_app.contrib.")]
        assert len(contribs) == 4, contribs
        for config in contribs:  # each integration's admin is loaded, as a host's is
            assert any(admin.site.is_registered(model) for model in config.get_models()), config
        for name, app in get_commands().items():
            if app.startswith("turnstate_app"):
                load_command_class(app, name)
        frameworks = FRAMEWORKS
        print(sorted({f for f in frameworks for m in sys.modules if m == f or m.startswith(f + ".")}))
        """
    ).replace("FRAMEWORKS", repr(FRAMEWORKS))
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
