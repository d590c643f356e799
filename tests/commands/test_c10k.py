"""``python -m iolab sleepers``: its --runtime choices, written out to keep ``--help`` fast, are c10k's runtimes."""

from __future__ import annotations

import argparse

from iolab.commands import build_parser
from iolab.topics.c10k.runtimes import RUNTIMES


def _option(parser: argparse.ArgumentParser, flag: str) -> argparse.Action:
    return next(action for action in parser._actions if flag in action.option_strings)


def test_the_runtime_choices_are_the_runtimes_table_in_its_order() -> None:
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(_option(commands.choices["sleepers"], "--runtime").choices or []) == list(RUNTIMES)
