"""benchmarks/limits.py runs: three figures in one run (tiny versions here), nginx and wrk optional."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from iolab.load.external import have

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "limits.py"


@pytest.mark.solo  # it saturates the CPU with wrk, nginx and the kit's generator for a few seconds
def test_limits_quick_prints_the_three_figures_and_skips_what_is_not_installed():
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--repeats", "1"],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"{__import__('os').cpu_count()} cores")
    figures = {line.split(":")[0]: line for line in lines[1:-1]}
    assert list(figures) == ["sleepers", "generator", "server"]
    assert figures["sleepers"].rstrip().endswith(("met", "NOT met"))
    for name in ("generator", "server"):
        if have("nginx") and have("wrk"):
            assert " req/s" in figures[name] and not figures[name].endswith("skipped")
        else:
            assert "is not installed" in figures[name] and figures[name].endswith("skipped")
    if have("nginx") and have("wrk"):  # the ceiling beside the server line: fixed_answer.py answered wrk
        assert "without the kit's HTTP layer (fixed_answer.py) / nginx:" in done.stderr
        assert "fixed " in done.stderr and " req/s" in done.stderr
