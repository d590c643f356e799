"""``python -m iolab costs`` (chapter 1): what a fork, a thread and an asyncio task cost, as a JSON table."""

import io

import pandas as pd

from iolab.commands import main


def test_costs_prints_one_json_row_per_kind(capsys):
    assert main(["costs", "--forks", "5", "--threads", "5", "--tasks", "5", "--repeats", "1", "--json"]) == 0
    rows = pd.read_json(io.StringIO(capsys.readouterr().out))
    assert set(rows.kind) == {"process (fork)", "thread", "asyncio task"}
