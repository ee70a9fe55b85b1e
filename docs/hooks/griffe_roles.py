"""Griffe extension: the docstrings' Sphinx roles read as code on the site.

The docstrings were written for people reading the source, with roles such as
``:class:`~turnstate_app.errors.CheckpointLostError``` . Markdown has no roles, so each becomes
inline code of the name a reader would type (the last part, after ``~``), instead of showing
``:class:`` before it.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLES = "class|func|meth|attr|data|exc|mod|obj|const"
ROLE = re.compile(rf":(?:py:)?(?:{ROLES}):`(?P<tilde>~?)(?P<target>[^`]+)`")


def plain(match: re.Match[str]) -> str:
    target = match["target"]
    return f"`{target.rsplit('.', 1)[-1] if match['tilde'] else target}`"


class SphinxRolesAsCode(griffe.Extension):
    def on_instance(self, *, node: Any, obj: griffe.Object, agent: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(plain, obj.docstring.value)
