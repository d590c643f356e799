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


def seconds(text: str) -> float:
    """``text`` as a duration in seconds, above 0 (for timeouts)."""
    value = float(text)
    if not value > 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of seconds")
    return value


def seconds_between(lo: float, hi: float) -> Callable[[str], float]:
    """An argument type: ``text`` as seconds from ``lo`` to ``hi``, both included."""

    def seconds(text: str) -> float:  # argparse names the type by its function's name in its errors
        value = float(text)
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value} s: give {lo:g} to {hi:g} s")
        return value

    return seconds


def duration(text: str) -> float:
    """``text`` as seconds: a plain number (``0.1``) or a duration with its unit (``20ms``, ``30s``)."""
    from iolab.topics.upstreams.spec import parse_duration  # imported when a value is parsed, not for --help

    try:
        return float(text) if text.replace(".", "", 1).isdigit() else parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def int_in(lo: int, hi: int) -> Callable[[str], int]:
    """An argument type: a whole number from ``lo`` to ``hi`` (a run's size, bounded so a typo cannot run for hours)."""

    def parse(text: str) -> int:
        value = int(text)
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value:,} is out of range: give {lo:,} to {hi:,}")
        return value

    parse.__name__ = "whole number"  # argparse's message for a non-number: "invalid whole number value: 'x'"
    return parse
