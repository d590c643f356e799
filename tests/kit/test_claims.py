"""iolab.kit.claims: a toy chapter whose data flips changes its words and its "What held" table."""

from __future__ import annotations

import pandas as pd
import pytest

from iolab.kit import claims, plots, verdicts
from iolab.kit.scale import scale


def rps_of(server: str):
    return lambda df: df[df.server == server].rps


FASTER = claims.Claim(
    name="prefork-over-loop", statement="pre-fork serves more requests per second than one loop",
    expect="higher", data="toy-models", higher="faster", lower="slower",
    decide=lambda df: verdicts.compare(rps_of("prefork")(df), rps_of("loop")(df)),
    why_it_can_differ="one core: pre-fork's children take turns",
)


def runs(prefork: list[float], loop: list[float]) -> pd.DataFrame:
    return pd.DataFrame([{"server": "prefork", "rps": v} for v in prefork] + [{"server": "loop", "rps": v} for v in loop])


@pytest.fixture
def glued(monkeypatch, tmp_path):
    monkeypatch.setenv("IOLAB_DATA", str(tmp_path))  # what_held saves this run's verdicts
    store: dict[str, object] = {}
    monkeypatch.setattr(plots, "glue", lambda name, value: store.__setitem__(name, value))
    return store


def test_the_words_come_from_the_run_and_flip_with_its_data(glued):
    chapter = claims.Claims("toy")
    chapter.decide(FASTER, runs([300, 310, 305], [100, 101, 99]))
    assert glued["toy-claim-prefork-over-loop"].startswith("faster (")
    chapter.decide(FASTER, runs([100, 101, 99], [300, 310, 305]))  # another machine, another run
    assert glued["toy-claim-prefork-over-loop"].startswith("slower (")


def test_what_held_sets_this_run_beside_the_reference_and_says_why_they_can_differ(glued):
    reference = {"toy-models": runs([300, 310, 305], [100, 101, 99])}
    chapter = claims.Claims("toy")
    chapter.decide(FASTER, runs([100, 101, 99], [300, 310, 305]))
    table = chapter.what_held(reference.get)
    row = table.iloc[0]
    assert row["this run"].startswith("did not hold: slower")
    assert row["reference run"].startswith("held: faster")
    assert row["why they can differ"] == "one core: pre-fork's children take turns"
    assert glued["toy-what-held"].equals(table.set_index("claim"))


def test_agreeing_runs_need_no_excuse_and_a_missing_reference_is_said(glued):
    chapter = claims.Claims("toy")
    chapter.decide(FASTER, runs([300, 310, 305], [100, 101, 99]))
    agreeing = chapter.what_held({"toy-models": runs([290, 300, 310], [100, 99, 98])}.get).iloc[0]
    assert agreeing["why they can differ"] == ""
    missing = chapter.what_held(lambda name: None).iloc[0]
    assert missing["reference run"] == "no reference run" and missing["why they can differ"] == ""


def test_an_undecided_run_is_not_called_held_and_carries_its_warning(glued):
    chapter = claims.Claims("toy")
    here = chapter.decide(FASTER, runs([80, 140], [100, 101, 99]))
    assert claims.held(FASTER, here) == "not decided"
    assert "too few" in chapter.what_held(lambda name: None).iloc[0]["this run"]


def test_values_select_rows_and_say_when_none_match():
    df = runs([300, 310], [100, 101]).assign(target="/julia")
    assert list(claims.values(df, "rps", server="loop", target="/julia")) == [100, 101]
    with pytest.raises(ValueError, match="no rows"):
        claims.values(df, "rps", server="node")


def test_paired_ratios_divide_within_each_repeat():
    df = runs([300, 150], [100, 50]).assign(repeat=[0, 1, 0, 1])
    assert list(claims.paired_ratios(df, "rps", "server", "prefork", "loop")) == [3.0, 3.0]


def test_a_claim_this_machine_cannot_measure_pastes_the_references_words_labelled_so(glued):
    chapter = claims.Claims("toy")
    chapter.not_measured(FASTER, "io_uring is switched off", {"toy-models": runs([300, 310, 305], [100, 101, 99])}.get)
    words = glued["toy-claim-prefork-over-loop"]
    assert words.startswith("faster (") and "on the reference run (not measured here: io_uring is switched off)" in words
    row = chapter.what_held({"toy-models": runs([300, 310, 305], [100, 101, 99])}.get).iloc[0]
    assert row["this run"] == "not measured here" and row["reference run"].startswith("held: faster")
    chapter.not_measured(FASTER, "no Go", lambda name: None)
    assert glued["toy-claim-prefork-over-loop"] == "not measured here (no Go)"


def test_what_held_saves_this_runs_verdicts_for_the_next_run_to_compare(glued):
    saved: dict[str, pd.DataFrame] = {}
    chapter = claims.Claims("toy")
    chapter.decide(FASTER, runs([300, 310, 305], [100, 101, 99]))
    chapter.what_held(lambda name: None, save=lambda df, name: saved.__setitem__(name, df))
    row = saved["toy-claims"].iloc[0]
    assert list(saved["toy-claims"].columns) == claims.RECORD
    assert (row["claim"], row["verdict"], row["held"], row["scale"]) == ("prefork-over-loop", "higher", "held", scale().name)


def test_a_part_of_a_chapter_saves_and_glues_under_its_own_name_and_is_recorded_with_its_chapter(glued, tmp_path):
    saved: dict[str, pd.DataFrame] = {}
    part = claims.Claims("toy", part="second")
    part.decide(FASTER, runs([300, 310, 305], [100, 101, 99]))
    part.what_held(lambda name: None, save=lambda df, name: saved.__setitem__(name, df))
    assert list(saved) == ["toy-second-claims", "toy-second-claims-on-reference"]
    assert "toy-second-what-held" in glued and "toy-what-held" not in glued
    assert "toy-claim-prefork-over-loop" in glued  # the words keep the chapter's name: the page pastes them alike
    saved["toy-second-claims"].to_csv(tmp_path / "toy-second-claims.csv", index=False)
    assert set(claims.recorded(tmp_path).chapter) == {"toy"}


def _recorded(*verdicts: str, scale: str = "quick") -> pd.DataFrame:
    return pd.DataFrame([{"chapter": "04", "claim": f"c{i}", "statement": "s", "scale": scale, "verdict": v}
                         for i, v in enumerate(verdicts)])


def test_a_claim_decided_higher_then_lower_flipped_and_same_or_undecided_did_not():
    earlier = _recorded("higher", "higher", "lower", "same", "undecided")
    later = _recorded("lower", "same", "higher", "higher", "lower")
    assert list(claims.flips(earlier, later).claim) == ["c0", "c2"]


def test_runs_at_different_scales_are_not_compared():
    assert claims.flips(_recorded("higher", scale="full"), _recorded("lower")).empty


def test_the_what_held_table_shows_whole_sentences_once_the_books_style_is_on():
    long = "a claim whose statement runs well past fifty characters, as most of the book's do"
    table = pd.DataFrame({"claim": [long], "this run": ["held: faster (1.90-2.10x)"]}).set_index("claim")
    plots.use_style()
    assert long in table.to_html() and "..." not in table.to_html()


def test_the_reference_column_says_the_reference_run_did_not_decide_not_this_run(glued):
    chapter = claims.Claims("toy")
    chapter.decide(FASTER, runs([300, 310, 305], [100, 101, 99]))
    row = chapter.what_held({"toy-models": runs([100, 300, 200], [150, 210, 180])}.get, save=lambda df, name: None).iloc[0]
    assert row["reference run"].startswith("not decided by the reference run (")


def test_a_ratio_near_zero_keeps_two_significant_digits():
    assert verdicts.Comparison(0.0031, 0.0022, 0.0043, "lower", 0.1, (3, 3)).words() == "lower (0.0022-0.0043x)"
    assert verdicts.Comparison(0.0, 0.0, 0.0, "lower", 0.1, (3, 3)).words() == "lower (0.00-0.00x)"


def test_what_held_saves_the_reference_datas_verdicts_at_the_reference_runs_scale(glued):
    saved: dict[str, pd.DataFrame] = {}
    chapter = claims.Claims("toy")
    chapter.decide(FASTER, runs([300, 310, 305], [100, 101, 99]))
    chapter.what_held({"toy-models": runs([100, 101, 99], [300, 310, 305])}.get,
                      save=lambda df, name: saved.__setitem__(name, df), reference_scale=lambda name: "full")
    row = saved["toy-claims-on-reference"].iloc[0]
    assert (row["verdict"], row["held"], row["scale"]) == ("lower", "did not hold", "full")
    chapter.what_held(lambda name: None, save=lambda df, name: saved.__setitem__(name, df), reference_scale=lambda name: None)
    row = saved["toy-claims-on-reference"].iloc[0]
    assert (row["verdict"], row["scale"]) == ("not measured here", "none")


def test_a_shipped_reference_verdict_is_stale_when_missing_or_contradicted():
    decided = pd.DataFrame([{"chapter": "04", "claim": c, "expect": "higher", "verdict": v}
                            for c, v in (("kept", "higher"), ("new", "higher"), ("changed", "same"))])
    shipped = pd.DataFrame([{"chapter": "04", "claim": c, "expect": "higher", "verdict": v}
                            for c, v in (("kept", "higher"), ("changed", "higher"))])
    assert sorted(claims.stale(shipped, decided).claim) == ["changed", "new"]
