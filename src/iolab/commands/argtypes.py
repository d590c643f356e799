"""Argument types shared by the kit's commands: a bad number is refused by argparse with a reason."""

from __future__ import annotations

import argparse
from collections.abc import Callable


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


def int_in(lo: int, hi: int) -> Callable[[str], int]:
    """An argument type: a whole number from ``lo`` to ``hi`` (a run's size, bounded so a typo cannot run for hours)."""

    def parse(text: str) -> int:
        value = int(text)
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value:,} is out of range: give {lo:,} to {hi:,}")
        return value

    parse.__name__ = "whole number"  # argparse's message for a non-number: "invalid whole number value: 'x'"
    return parse


def seconds(lo: float, hi: float) -> Callable[[str], float]:
    """An argument type: a duration from ``lo`` to ``hi`` seconds (nan and inf refused too)."""

    def parse(text: str) -> float:
        value = float(text)
        if not lo <= value <= hi:  # also refuses nan
            raise argparse.ArgumentTypeError(f"{text} s is out of range: give {lo:g} to {hi:g} s")
        return value

    parse.__name__ = "seconds"
    return parse
