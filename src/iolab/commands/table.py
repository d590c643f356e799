"""What every command shares: the type of the subcommand registry, one way to register a command
with examples under its help and one to register an action with its run function, and one way to
print a table."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

Subparsers = "argparse._SubParsersAction[argparse.ArgumentParser]"


def add_with_examples(sub: Subparsers, name: str, epilog: str, help_: str, **kwargs: object) -> argparse.ArgumentParser:
    """Register the command ``name``; its ``epilog`` (examples, a table of forms) is printed as written,
    line for line, where argparse would refill it into one paragraph."""
    return sub.add_parser(name, help=help_, epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter,
                          **kwargs)


def add_action(actions: Subparsers, name: str, run: Callable[[argparse.Namespace], int],
               **kwargs: object) -> argparse.ArgumentParser:
    """Register the action ``name`` (``homework grade``, ``netlab up``), run by ``run``; its parser.

    ``run`` is a module-level function, so it finds the action's parser in ``args.parser``, to refuse
    a bad setting with the action's own usage line (``args.parser.error``).
    """
    parser = actions.add_parser(name, **kwargs)
    parser.set_defaults(run=run, parser=parser)
    return parser


def print_table(df: "pd.DataFrame", as_json: bool, digits: int = 3, index: bool = False) -> None:
    """Print ``df`` as a plain table (rounded to ``digits``), or as a JSON list of records."""
    if as_json:
        print(df.to_json(orient="records"))
    else:
        print(df.round(digits).to_string(index=index))
