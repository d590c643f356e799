"""iolab.topics.event_loop: the input file, the counting, and every client version reaching the same top-10."""

from __future__ import annotations

import collections
import random
import subprocess

import pandas as pd
import pytest

from iolab.kit import machine, platforms, procs
from iolab.topics.event_loop import corpus, run
from iolab.topics.event_loop.counting import TopWords, WordStream

CONNECTIONS, WORDS = 60, 5


def test_the_shipped_input_is_small_and_regenerates_byte_for_byte() -> None:
    text = corpus.PAIRS_PATH.read_text()
    assert len(text.encode()) < 1_000_000
    assert corpus.generate() == text
    assert len(corpus.load()) == corpus.LINES


@pytest.mark.parametrize("seed", range(5))
def test_the_running_top_matches_a_full_count(seed: int) -> None:
    rng = random.Random(seed)
    words = rng.choices([f"w{i}" for i in range(40)], weights=[1 / (i + 1) for i in range(40)], k=3000)
    top = TopWords()
    for i, word in enumerate(words, 1):
        top.add(word)
        if i % 500 == 0:  # the running top is right at every moment, not only at the end
            assert top.ranked() == corpus.ranked(collections.Counter(words[:i]))
    assert top.words == len(words)


def test_a_word_cut_between_two_reads_is_counted_once() -> None:
    stream = WordStream()
    assert stream.feed(b"alpha\nbe") == ["alpha"]
    assert stream.feed(b"ta\ngam") == ["beta"]
    assert stream.feed(b"ma\n") == ["gamma"]


def test_the_expected_answer_grows_with_the_connections() -> None:
    pairs = corpus.load()
    few, many = corpus.expected_counts(pairs, 10, WORDS), corpus.expected_counts(pairs, 100, WORDS)
    assert sum(few.values()) == 10 * WORDS and sum(many.values()) == 100 * WORDS
    assert 0.05 * WORDS <= corpus.ideal_seconds(pairs, 10, WORDS) <= 0.15 * WORDS


@pytest.mark.parametrize("model", list(run.CLIENTS))
def test_every_client_version_reaches_the_same_top10(model: str) -> None:
    # A server per version: the server hands out slices in accept order, from slice 0.
    with run.open_word_server(WORDS) as server:
        assert server.url == f"http://127.0.0.1:{server.port}" and server.pid > 0
        result = run.run_client(model, server.port, CONNECTIONS, timeout=60)
    assert result["top10"] == corpus.expected_top(corpus.load(), CONNECTIONS, WORDS)
    assert result["words"] == CONNECTIONS * WORDS
    assert result["seconds"] >= corpus.ideal_seconds(corpus.load(), CONNECTIONS, WORDS)
    assert result["peak_rss_mb"] >= result["rss_before_mb"] > 0


def test_an_unknown_version_is_refused() -> None:
    with pytest.raises(ValueError, match="threads, scratch, asyncio, trio"):
        run.run_client("gevent", 1, 1)


def test_the_cli_prints_one_json_object() -> None:
    result = run.measure("scratch", 20, WORDS, timeout=60)
    assert {"top10", "seconds", "peak_rss_mb", "connections", "cpu_s"} <= result.keys()
    assert result["connections"] == 20 and len(result["top10"]) == 10


def test_on_a_faked_macos_a_run_measures_its_time_but_no_memory(monkeypatch) -> None:
    monkeypatch.setenv(platforms.FAKE_ENV, "darwin")  # the child the run starts inherits it
    result = run.measure("scratch", 20, WORDS, timeout=60)
    assert result["words"] == 20 * WORDS and result["seconds"] > 0
    assert result["peak_rss_mb"] != result["peak_rss_mb"] and result["rss_before_mb"] != result["rss_before_mb"]  # NaN


def test_too_low_a_descriptor_limit_names_the_limit_and_the_fix() -> None:
    result = run.measure("asyncio", 100, WORDS, open_files=60, timeout=60)
    assert "Too many open files" in result["cause"]
    assert "(ulimit -n) allows 60" in result["error"] and f"`ulimit -n {100 + machine.SPARE_DESCRIPTORS}`" in result["error"]


def test_the_cli_help_runs_without_importing_the_clients() -> None:
    out = subprocess.run(procs.python_argv("-m", "iolab", "wordfreq", "--help"), capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert "--connections" in out and "threads,scratch,asyncio,trio" in out


def test_a_measurement_refuses_what_does_not_apply_before_any_process_starts() -> None:
    with pytest.raises(ValueError, match="threads, scratch, asyncio, trio"):
        run.measure("gevent", 5, WORDS)
    with pytest.raises(ValueError, match="threads version"):
        run.Measurement("asyncio", 5, stack_kib=256)
    with pytest.raises(TypeError, match="open_file"):
        run.measure("asyncio", 5, WORDS, open_file=100)


def test_the_two_children_take_their_specs_through_the_channel() -> None:
    spec = run.Measurement("threads", 5, stack_kib=256, open_files=300)
    assert run.Measurement.from_json(spec.to_json()) == spec
    assert run.WordServer.from_json(run.WordServer(words=3).to_json()) == run.WordServer(words=3)
    with pytest.raises(ValueError, match="connections"):
        run.Measurement.from_json('{"model": "threads", "connections": "5"}')


def test_phases_split_a_run_into_connecting_and_the_rest_and_memory_per_connection() -> None:
    runs = pd.DataFrame({"seconds": [3.0, 1.5], "connect_s": [2.0, 0.25], "peak_rss_mb": [30.0, 20.0],
                         "rss_before_mb": [20.0, 19.0], "connections": [1000, 512]})
    split = run.phases(runs)
    assert split.after_s.tolist() == [1.0, 1.25]
    assert split.kb_per_connection.tolist() == [10 * 1024 / 1000, 1024 / 512]
    assert "after_s" not in runs  # the runs given are left as they were
