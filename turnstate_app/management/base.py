"""The base of the app's commands: help marked for translation reaches argparse as text."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser


class TurnstateCommand(BaseCommand):
    """``help`` may be a lazy translation (translated in the language active when it is shown);
    argparse runs ``re.sub`` over the description, so it gets ``str(help)``, never the proxy."""

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        self.help = str(self.help)
        return super().create_parser(prog_name, subcommand, **kwargs)
