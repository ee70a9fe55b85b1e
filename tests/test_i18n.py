"""Strings a person reads are marked for translation, and a catalogue builds from them.

``makemessages`` and ``compilemessages`` run for one locale on a copy of the app in a temporary
directory (never in the tree): the catalogue must hold the commands' help, the REST schema's
descriptions and help texts, and the model help text whose ``<tool_call_id>`` is a key's text
(with a note for translators); and a translation compiled from it must be what gettext reads.
GNU gettext is a Debian package (``make gettext`` installs it when missing).
"""

from __future__ import annotations

import gettext
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from drf_spectacular.generators import SchemaGenerator

from tests.legs import SQLITE_LEGS_ONLY

ROOT = Path(__file__).resolve().parent.parent
LOCALE = "de"

pytestmark = SQLITE_LEGS_ONLY

MARKED = (
    # command help (the description and an option)
    "List pending pauses whose request is recorded but whose run this store cannot continue.",
    "Count what would expire; change nothing.",
    "Pauses per UPDATE (default {default}, max {maximum}).",
    # the REST schema: help texts, an operation's summary, an error's description
    "The pause's token, as minted.",
    "Answer a pause",
    "expired: the pause is past its age.",
    # a model help text with <...>: a key's text, not HTML
    "What the row holds, e.g. ask_user_request:<tool_call_id> or turn_state:<jti>.",
)


def django_admin(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.readme_install.settings", "PYTHONPATH": str(ROOT)}
    env.pop("DATABASE_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "django", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The app copied aside, with ``locale/de/LC_MESSAGES/django.po`` made from its sources."""
    if shutil.which("msgfmt") is None or shutil.which("xgettext") is None:
        pytest.fail("GNU gettext is not installed: run `make gettext` (apt-get install gettext)")
    app = tmp_path_factory.mktemp("i18n") / "turnstate_app"
    shutil.copytree(ROOT / "turnstate_app", app, ignore=shutil.ignore_patterns("__pycache__", "locale"))
    (app / "locale").mkdir()
    made = django_admin(app, "makemessages", "--locale", LOCALE, "--no-wrap")
    assert made.returncode == 0, made.stderr
    po = app / "locale" / LOCALE / "LC_MESSAGES" / "django.po"
    assert po.is_file(), made.stdout
    return po


def test_the_strings_a_person_reads_are_in_the_catalogue(catalogue: Path) -> None:
    text = catalogue.read_text()
    for message in MARKED:
        escaped = message.replace('"', '\\"')
        assert f'msgid "{escaped}"' in text, message


def test_the_key_help_text_tells_translators_its_brackets_are_not_html(catalogue: Path) -> None:
    text = catalogue.read_text()
    entry = text.split('msgid "What the row holds', 1)[0].rsplit("\n\n", 1)[-1]
    assert "#. Translators:" in entry and "not" in entry and "HTML" in entry


def test_a_compiled_translation_is_what_gettext_reads(catalogue: Path) -> None:
    text = catalogue.read_text().replace(
        'msgid "The pause\'s token, as minted."\nmsgstr ""',
        'msgid "The pause\'s token, as minted."\nmsgstr "Das Token der Pause, wie ausgegeben."',
    )
    catalogue.write_text(text)
    compiled = django_admin(catalogue.parents[3], "compilemessages", "--locale", LOCALE)
    assert compiled.returncode == 0, compiled.stderr
    mo = catalogue.with_suffix(".mo")
    with mo.open("rb") as handle:
        translations = gettext.GNUTranslations(handle)
    assert translations.gettext("The pause's token, as minted.") == "Das Token der Pause, wie ausgegeben."


def test_the_schema_says_nothing_meant_for_maintainers_about_the_answer_body() -> None:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    body = schema["components"]["schemas"]["TurnstateResumeRequest"]
    assert "lifecycle" not in body.get("description", "")
    assert body["description"].startswith("The body of an answer")
