"""The input of the word-frequency experiment: (word, wait) pairs in ``data/wordfreq/pairs.txt``.

Source 004's server read "a series of (word, wait_time) pairs" from a file and, per connection, sent
each word and then waited. Its file is not published, so the course ships its own, made by
:func:`generate` with a fixed seed: invented words (syllables drawn at random, no text of anyone's),
drawn with Zipf's law, as words in prose are, and waits of 50-150 ms. ``generate()`` makes it again, byte for byte (a
test checks).

Connection ``k`` (in accept order) gets the ``words`` pairs starting at line ``k * words``, wrapping
around the file. Which client gets which slice depends on timing, but the slices handed out to N
connections do not, so every client version must end with the same counts: :func:`expected_top`.
"""

from __future__ import annotations

import collections
import random
from pathlib import Path

from iolab.kit.paths import data_dir

SEED = 4  # source 004
LINES = 10_000
VOCABULARY = 3_000
ZIPF_EXPONENT = 1.1
WAIT_MS = (50, 150)
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
TOP = 10
# Next to the other course data (kit.paths, not kit.results, which would load pandas into every
# client whose memory is measured).
PAIRS_PATH = data_dir() / "wordfreq" / "pairs.txt"


def _vocabulary(rng: random.Random) -> list[str]:
    words: dict[str, None] = {}
    while len(words) < VOCABULARY:
        words["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3)))] = None
    return list(words)


def generate(lines: int = LINES, seed: int = SEED) -> str:
    """The text of the pairs file: ``lines`` lines of ``word wait_ms``."""
    rng = random.Random(seed)
    vocabulary = _vocabulary(rng)
    weights = [1 / rank**ZIPF_EXPONENT for rank in range(1, len(vocabulary) + 1)]
    words = rng.choices(vocabulary, weights, k=lines)
    return "".join(f"{word} {rng.randint(*WAIT_MS)}\n" for word in words)


def load(path: Path | None = None) -> list[tuple[str, float]]:
    """The (word, wait in seconds) pairs of the file."""
    pairs = []
    for number, line in enumerate((path or PAIRS_PATH).read_text().splitlines(), 1):
        word, _, wait = line.partition(" ")
        if not word or not wait.isdigit():
            raise ValueError(f"{path or PAIRS_PATH}:{number}: expected 'word wait_ms', got {line!r}")
        pairs.append((word, int(wait) / 1000))
    return pairs


def slice_for(pairs: list[tuple[str, float]], index: int, words: int) -> list[tuple[str, float]]:
    """The pairs the server sends on its ``index``-th connection."""
    start = index * words
    return [pairs[(start + i) % len(pairs)] for i in range(words)]


def expected_counts(pairs: list[tuple[str, float]], connections: int, words: int) -> collections.Counter[str]:
    """How often each word arrives over ``connections`` connections of ``words`` words each."""
    return collections.Counter(w for k in range(connections) for w, _ in slice_for(pairs, k, words))


def ranked(counts: dict[str, int], size: int = TOP) -> list[tuple[str, int]]:
    """The ``size`` most frequent words with their counts, ties broken alphabetically."""
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:size]


def expected_top(pairs: list[tuple[str, float]], connections: int, words: int) -> list[tuple[str, int]]:
    """The top-10 every client must end with."""
    return ranked(expected_counts(pairs, connections, words))


def ideal_seconds(pairs: list[tuple[str, float]], connections: int, words: int) -> float:
    """The run time if nothing but the server's waits took time: the slowest connection's total wait."""
    return max(sum(wait for _, wait in slice_for(pairs, k, words)) for k in range(connections))
