"""The getting-started page's Python runs as written, in order, against the test database.

A reader copies these blocks first; a renamed argument or a changed result would make the page
lie, so the page's own text is executed here (the README's quickstarts run in a fresh project:
test_quickstarts).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parent.parent / "docs" / "getting-started.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```$", PAGE.read_text(), re.MULTILINE | re.DOTALL)


def test_the_page_has_its_two_steps() -> None:
    assert len(BLOCKS) == 2
    assert "mint_pause(" in BLOCKS[0]
    assert "resume_pause(" in BLOCKS[1]


@pytest.mark.django_db(transaction=True)
def test_the_first_pause_and_the_first_answer_run_as_written() -> None:
    namespace: dict[str, object] = {}
    for block in BLOCKS:
        exec(compile(block, str(PAGE), "exec"), namespace)  # noqa: S102 - the page's own code
    resumed = namespace["resumed"]
    assert resumed.answer == "May 11"  # type: ignore[attr-defined]
