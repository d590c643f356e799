"""iolab.commands.tools: ``compare`` reads numbers or files and prints the verdict in the words asked for."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from iolab.commands import main


def test_compare_prints_the_verdict_in_the_words_asked_for(capsys):
    assert main(["compare", "300,310,295", "100,102,99", "--higher", "faster", "--lower", "slower"]) == 0
    assert capsys.readouterr().out.startswith("faster (")


def test_compare_reads_a_csv_column_and_prints_json(tmp_path, capsys):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("rps\n100\n101\n99\n")
    b.write_text("rps\n100\n99\n101\n")
    assert main(["compare", str(a), str(b), "--column", "rps", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "same" and out["counts"] == [3, 3]


def test_compare_warns_about_unstable_runs_and_refuses_what_is_not_numbers(capsys):
    main(["compare", "1,1.5,2", "1,1,1"])
    assert "unstable" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["compare", "fast", "1,2"])
    assert "neither a file nor numbers" in capsys.readouterr().err


def _claims(folder, machine=None, **verdicts):
    folder.mkdir()
    rows = [{"chapter": "04", "claim": name, "statement": f"{name} holds", "scale": "quick", "expect": "higher",
             "verdict": v, "held": "held" if v == "higher" else "did not hold"} for name, v in verdicts.items()]
    pd.DataFrame(rows).to_csv(folder / "04-claims.csv", index=False)
    if machine:
        cpu, cores = machine
        (folder / "04-claims.json").write_text(json.dumps({"cpu": cpu, "cores": cores, "scale": "quick"}))
    return folder


def test_claims_shows_both_runs_and_fails_only_on_a_claim_decided_the_other_way(tmp_path, capsys):
    earlier = _claims(tmp_path / "earlier", fast="higher", cheap="higher")
    steady = _claims(tmp_path / "steady", fast="higher", cheap="same")
    assert main(["claims", str(steady), "--earlier", str(earlier)]) == 0
    out = capsys.readouterr().out
    assert "cheap" in out and "flipped" not in out
    flipped = _claims(tmp_path / "flipped", fast="lower", cheap="higher")
    assert main(["claims", str(flipped), "--earlier", str(earlier)]) == 1
    assert "flipped: 04-claim-fast (fast holds): higher in" in capsys.readouterr().out


def test_claims_without_an_earlier_run_says_so_and_passes(tmp_path, capsys):
    (tmp_path / "none").mkdir()
    later = _claims(tmp_path / "later", fast="higher")
    assert main(["claims", str(later), "--earlier", str(tmp_path / "none")]) == 0
    assert "no claims recorded in" in capsys.readouterr().out


def test_reference_verdicts_are_recorded_from_a_run_and_a_claim_they_miss_or_contradict_fails(tmp_path, capsys):
    run = _claims(tmp_path / "run", fast="higher")
    (run / "04-claims.csv").rename(run / "04-claims-on-reference.csv")  # the reference data, as the run decided it
    reference = tmp_path / "reference"
    reference.mkdir()
    args = ["claims", str(run), "--earlier", str(tmp_path / "run"), "--reference", str(reference)]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "out of date: 04-claim-fast" in out and "records nothing" in out and "--record-reference" in out
    assert main(args + ["--record-reference"]) == 0
    recorded = pd.read_csv(reference / "04-claims.csv", dtype={"chapter": str})
    assert list(recorded.verdict) == ["higher"] and (reference / "04-claims.json").is_file()
    capsys.readouterr()
    assert main(args) == 0 and "out of date" not in capsys.readouterr().out
    pd.DataFrame([{**recorded.iloc[0].to_dict(), "verdict": "same"}]).to_csv(reference / "04-claims.csv", index=False)
    assert main(args) == 1  # a changed claim, or one the reference data now decides otherwise


def test_record_reference_leaves_a_chapter_whose_shipped_verdicts_agree(tmp_path, capsys):
    run = _claims(tmp_path / "run", fast="higher")
    (run / "04-claims.csv").rename(run / "04-claims-on-reference.csv")
    reference = _claims(tmp_path / "reference", fast="higher")
    (reference / "04-claims.json").write_text('{"cpu": "the reference machine"}')
    assert main(["claims", str(run), "--reference", str(reference), "--record-reference"]) == 0
    assert "the reference machine" in (reference / "04-claims.json").read_text()


def test_claims_compares_runs_on_the_same_kind_of_machine_only(tmp_path, capsys):
    xeon, laptop = ("Intel Xeon", 2), ("Apple M2", 8)
    earlier = _claims(tmp_path / "earlier", machine=xeon, fast="higher")
    elsewhere = _claims(tmp_path / "elsewhere", machine=laptop, fast="lower")
    assert main(["claims", str(elsewhere), "--earlier", str(earlier)]) == 0
    assert "same kind of machine" in capsys.readouterr().out
    here = _claims(tmp_path / "here", machine=xeon, fast="lower")
    assert main(["claims", str(here), "--earlier", str(earlier)]) == 1
    assert "flipped: 04-claim-fast" in capsys.readouterr().out


def test_claims_compares_the_later_run_with_every_earlier_one_given(tmp_path, capsys):
    (tmp_path / "none").mkdir()
    recorded = _claims(tmp_path / "recorded", fast="higher")
    later = _claims(tmp_path / "later", fast="lower")
    assert main(["claims", str(later), "--earlier", str(tmp_path / "none"), "--earlier", str(recorded)]) == 1
    out = capsys.readouterr().out
    assert "no claims recorded in" in out and f"higher in {recorded}" in out
