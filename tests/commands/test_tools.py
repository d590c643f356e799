"""iolab.commands.tools: ``compare`` reads numbers or files and prints the verdict in the words asked for."""

from __future__ import annotations

import json

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
