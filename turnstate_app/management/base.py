"""The base of the app's commands: help marked for translation reaches argparse as text,
options given as Python keywords are checked as argv's are, and a key ring that breaks its rule
is a command error naming it, not a traceback."""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from turnstate_app.errors import KeyRingError


class TurnstateCommand(BaseCommand):
    """``help`` may be a lazy translation (translated in the language active when it is shown);
    argparse runs ``re.sub`` over the description, so it gets ``str(help)``, never the proxy."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.checked_options: list[argparse.Action] = []

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        self.help = str(self.help)
        self.checked_options = []
        return super().create_parser(prog_name, subcommand, **kwargs)

    def add_checked(self, container: Any, *flags: str, **kwargs: Any) -> argparse.Action:
        """``container.add_argument`` for an option whose ``type=`` validates it, remembered so
        that the same value given as a Python keyword is validated too (:meth:`execute`)."""
        action: argparse.Action = container.add_argument(*flags, **kwargs)
        if action is not None:  # a stand-in parser (the option tests' recorder) returns nothing
            self.checked_options.append(action)
        return action

    def execute(self, *args: Any, **options: Any) -> str | None:
        """``call_command(name, older_than=...)`` hands keywords past argparse (only required
        options are parsed), so each checked option's value goes through its validator here;
        a value argparse already converted passes again unchanged."""
        for action in self.checked_options:
            value = options.get(action.dest)
            if value is None or value == action.default or not callable(action.type):
                continue
            try:
                options[action.dest] = action.type(str(value))
            except argparse.ArgumentTypeError as error:
                raise CommandError(f"argument {'/'.join(action.option_strings)}: {error}") from None
        try:
            return super().execute(*args, **options)
        except KeyRingError as error:  # a broken ring stops any command that reads or writes values
            raise CommandError(str(error)) from error
