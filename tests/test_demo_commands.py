"""The demos hand a pause's jti to the example project's commands on the command line.

A jti is ``secrets.token_urlsafe``: about one in 64 begins with "-", which argparse took for an
option ("the following arguments are required: jti"), and the demo failed at random. An
unknown jti gets a clear error, not a traceback.
"""

from __future__ import annotations

import pytest

from example_project.demo_support import Demo, DemoFailedError, free_port
from tests.demo_runs import only_on_sqlite, this_tree

pytestmark = only_on_sqlite

LOOKS_LIKE_AN_OPTION = "-2OknKjZbwhHkvHJibOjYuO1Y0nVI1sv"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    database = tmp_path_factory.mktemp("demo-commands") / "demo.sqlite3"
    demo = Demo(f"sqlite:///{database}", free_port())
    demo.env.pop("DJANGO_SETTINGS_MODULE", None)  # the example project's own settings
    demo.env = this_tree(demo.env)
    demo.manage("prepare the database", "migrate", "--no-input")
    return demo


@pytest.mark.parametrize("command", ["continue_booking", "redeliver_trip"])
def test_a_jti_beginning_with_a_dash_reaches_the_command(demo: Demo, command: str) -> None:
    with pytest.raises(DemoFailedError) as failure:
        demo.manage_pause("redeliver", command, LOOKS_LIKE_AN_OPTION)
    assert f"no pause {LOOKS_LIKE_AN_OPTION!r}" in str(failure.value)


def test_the_bare_jti_is_what_argparse_refused(demo: Demo) -> None:
    with pytest.raises(DemoFailedError, match="arguments are required: jti"):
        demo.manage("redeliver", "continue_booking", LOOKS_LIKE_AN_OPTION)
