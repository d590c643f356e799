"""``iolab.topics.c10k.collector.answers_allowed``: which words of pred-10-gc a pair of runs allows."""

from __future__ import annotations

from iolab.topics.c10k.collector import WITHOUT_COLLECTOR, answers_allowed

LATER, NO_SOONER, BY_MORE, BY_AT_MOST = WITHOUT_COLLECTOR


def test_a_run_that_saves_about_its_collector_time_allows_both_sooner_answers_and_nothing_else() -> None:
    assert set(answers_allowed(saved_s=0.60, collector_s=0.60, margin_s=0.05)) == {BY_MORE, BY_AT_MOST}


def test_saving_far_less_than_the_collector_time_allows_only_by_at_most() -> None:
    assert answers_allowed(saved_s=1.33, collector_s=2.64, margin_s=0.05) == [BY_AT_MOST]


def test_saving_far_more_than_the_collector_time_allows_only_by_more() -> None:
    assert answers_allowed(saved_s=1.0, collector_s=0.2, margin_s=0.05) == [BY_MORE]


def test_a_difference_within_the_margin_allows_no_sooner_and_later_too() -> None:
    allowed = set(answers_allowed(saved_s=0.01, collector_s=0.003, margin_s=0.05))
    assert {LATER, NO_SOONER} <= allowed


def test_a_run_clearly_slower_without_the_collector_allows_later_only() -> None:
    assert answers_allowed(saved_s=-0.5, collector_s=0.1, margin_s=0.05) == [LATER]
