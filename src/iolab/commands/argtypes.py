"""Argument types shared by the kit's commands: a bad number is refused by argparse with a reason."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """``text`` as an int of at least 1 (for counts of workers, threads, requests)."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number")
    return value


def non_negative_int(text: str) -> int:
    """``text`` as an int of at least 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return value
