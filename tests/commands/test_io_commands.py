import json

import pytest

from iolab.commands import main


def test_readiness_prints_one_json_row_per_count_with_a_column_per_selector(capsys):
    assert main(["readiness", "--watched", "1", "50", "--repeats", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["watched"] for r in rows] == [1, 50]
    assert {"select", "poll", "epoll"} <= set(rows[0])


def test_readiness_waiting_table(capsys):
    assert main(["readiness", "--waiting", "0.3", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 4 and all(r["cpu_s_per_s"] >= 0 for r in rows)


def test_readiness_rejects_zero_pipes(capsys):
    with pytest.raises(SystemExit):
        main(["readiness", "--watched", "0"])
    assert "at least 1" in capsys.readouterr().err


def test_backlog_json_shows_the_queue_stopping_at_backlog_plus_one(capsys):
    assert main(["backlog", "--backlog", "1", "--clients", "3", "--timeout", "0.1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["connected"] for r in rows] == [True, True, False]


def test_backlog_rejects_unbounded_runs(capsys):
    with pytest.raises(SystemExit):
        main(["backlog", "--clients", "5000"])
    assert "--clients" in capsys.readouterr().err
