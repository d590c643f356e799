import os
import subprocess
import sys

import psutil


def _guard(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "iolab", "guard", "--", *argv], capture_output=True, text=True, timeout=60)


def test_guard_passes_through_a_clean_commands_exit_code():
    assert _guard("true").returncode == 0
    assert _guard("sh", "-c", "exit 3").returncode == 3


def test_guard_fails_and_kills_what_a_command_leaves_behind():
    marker = "61.2345"  # an unusual sleep time marks the orphan
    result = _guard("sh", "-c", f"sleep {marker} & echo started")
    assert result.returncode == 1
    assert "left 1 process(es) running" in result.stderr
    assert f"sleep {marker}" in result.stderr
    assert not [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", marker]]


def test_on_a_faked_macos_the_guard_runs_without_a_subreaper_and_says_what_escapes_it():
    env = {**os.environ, "IOLAB_FAKE_PLATFORM": "darwin"}
    result = subprocess.run([sys.executable, "-m", "iolab", "guard", "--", "sh", "-c", "exit 3"],
                            capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 3
    assert result.stderr == "guard: no Linux's child subreaper (prctl) on macOS: an orphan escapes this check\n"
