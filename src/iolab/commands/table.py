"""What every command shares: the type of the subcommand registry, and one way to print a table."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse  # noqa: F401 - named by the Subparsers alias

    import pandas as pd

Subparsers = "argparse._SubParsersAction[argparse.ArgumentParser]"


def print_table(df: "pd.DataFrame", as_json: bool, digits: int = 3, index: bool = False) -> None:
    """Print ``df`` as a plain table (rounded to ``digits``), or as a JSON list of records."""
    if as_json:
        print(df.to_json(orient="records"))
    else:
        print(df.round(digits).to_string(index=index))
