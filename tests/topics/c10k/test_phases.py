"""Where a sleepers run's wall time goes: the asyncio program's marks and their breakdown."""

from __future__ import annotations

import pytest

from iolab.topics.c10k import run
from iolab.topics.c10k.phases import PHASES, breakdown


def test_the_breakdown_of_an_asyncio_run_adds_up_to_its_wall_time_phase_by_phase():
    result = run("asyncio", 5_000, 0.3)
    assert result.status == "completed", result.error
    table = breakdown(result)
    assert list(table.phase) == [name for name, _ in PHASES]
    assert table.seconds.sum() == pytest.approx(result.wall_s, abs=1e-6)
    seconds = table.set_index("phase").seconds
    assert seconds["the sleep"] == 0.3
    assert seconds["start-up"] > 0 and seconds["creating tasks"] > 0 and seconds["first steps"] > 0
    # The last timer can fire a hair early (asyncio rounds to its clock's resolution), never much.
    assert seconds["late wake-up"] > -0.005
    assert seconds["teardown"] > 0


def test_the_collector_s_share_of_the_phases_is_what_the_program_reports():
    result = run("asyncio", 20_000, 0.2)  # 20,000 live tasks: the collector runs over them
    table = breakdown(result)
    assert (table.collector_s >= 0).all()
    assert table.collector_s.sum() == pytest.approx(result.gc_s, abs=1e-3)
    assert table.set_index("phase").collector_s["creating tasks"] > 0


def test_a_run_without_marks_has_no_breakdown():
    trio_run = run("trio", 10, 0.1)
    with pytest.raises(ValueError, match="only the asyncio program's sleep mode"):
        breakdown(trio_run)
    held = run("asyncio", 10, 0.3, mode="socket", settle_s=0.2)
    with pytest.raises(ValueError, match="no marks"):
        breakdown(held)
