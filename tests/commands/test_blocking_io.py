import json

import pytest

from iolab.commands import main


def test_readiness_prints_one_json_row_per_count_with_a_column_per_selector(capsys):
    assert main(["readiness", "--watched", "1", "50", "--repeats", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["watched"] for r in rows] == [1, 50]
    assert {"select", "poll", "epoll"} <= set(rows[0])


def test_readiness_waiting_prints_a_row_per_strategy_and_a_blocked_reader_calls_once_per_message(capsys):
    assert main(["readiness", "--waiting", "0.3", "--json"]) == 0
    rows = {r["strategy"]: r for r in json.loads(capsys.readouterr().out)}
    assert list(rows) == ["spin on non-blocking read()", "poll every 1 ms (sleep)", "block in select()",
                          "block in read()"]
    assert {"wall_s", "cpu_s", "cpu_s_per_s", "wake_p50_us", "wake_max_us", "calls_per_s"} <= set(rows["block in read()"])
    assert all(r["wall_s"] >= 0.3 * 0.9 for r in rows.values()), "each strategy waited the --waiting seconds"
    # Counts of system calls, not CPU time, so the bounds hold on a busy machine (as in
    # topics/blocking_io/test_readiness.py): a blocked reader makes one read() per message (10 in
    # 0.3 s), a spinning one thousands.
    assert rows["block in read()"]["calls_per_s"] < 100 < 1000 < rows["spin on non-blocking read()"]["calls_per_s"]


def test_readiness_rejects_zero_pipes(capsys):
    with pytest.raises(SystemExit):
        main(["readiness", "--watched", "0"])
    assert "at least 1" in capsys.readouterr().err


def test_backlog_prints_one_json_row_per_client(capsys):
    # What the queue does past backlog + 1 is the solo test in topics/sockets/test_listen_backlog.py
    # (it times connects); here only what the command adds: its flags reach the experiment and each
    # client's row is printed. Two clients fit a backlog of 1, so neither waits for the timeout.
    assert main(["backlog", "--backlog", "1", "--clients", "2", "--timeout", "5", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["client"] for r in rows] == [1, 2]
    assert [(r["connected"], r["state"]) for r in rows] == [(True, "ESTABLISHED")] * 2
    assert {"connect_ms", "accept_queue", "overflows"} <= set(rows[0])


def test_backlog_rejects_unbounded_runs(capsys):
    with pytest.raises(SystemExit):
        main(["backlog", "--clients", "5000"])
    assert "--clients" in capsys.readouterr().err
