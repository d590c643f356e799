"""The experiment's two processes: ``python -m iolab.topics.event_loop serve|measure SPEC_JSON``.

- ``serve``: the word server (a :class:`~iolab.topics.event_loop.run.WordServer` as JSON), until
  SIGTERM or SIGINT; what :func:`~iolab.topics.event_loop.run.open_word_server` starts;
- ``measure``: one fresh process that runs a :class:`~iolab.topics.event_loop.run.Measurement` (given
  as JSON) and prints what it measured as one JSON line; what :func:`~iolab.topics.event_loop.run.measure`
  starts, so that no run inherits the memory or the descriptors of another.

The command ``python -m iolab wordfreq`` builds the same specs from its flags and calls the same functions.
"""

from __future__ import annotations

import json
import sys

from iolab.topics.event_loop.run import ENTRY, Measurement, WordServer, measure_here, run_word_server


def main(argv: list[str]) -> int:
    """Run what ``argv[1]`` names with the spec in ``argv[2]``; the exit code (1: the measurement failed)."""
    what, spec = argv[1], json.loads(argv[2])
    if what == "serve":
        return run_word_server(WordServer(**spec))
    if what != "measure":
        raise SystemExit(f"usage: python -m {ENTRY} serve|measure SPEC_JSON (not {what!r})")
    result = measure_here(Measurement(**spec))
    if result is None:
        print("stopped by a signal", file=sys.stderr)
        return 1
    print(json.dumps(result), flush=True)
    return 1 if "error" in result else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
