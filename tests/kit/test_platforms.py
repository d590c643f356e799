"""Which Linux facilities are here, and the note a skipped cell prints: ``iolab.kit.platforms``, on a faked macOS."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from iolab.kit import machine, platforms, plots, procfs, procnet


@pytest.fixture
def macos(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(platforms.FAKE_ENV, "darwin")


def test_on_linux_every_facility_the_course_uses_is_here(monkeypatch) -> None:
    monkeypatch.delenv(platforms.FAKE_ENV, raising=False)
    assert platforms.system_name() == "Linux" and not platforms.faked()
    assert {row["facility"]: row["here"] for row in platforms.table()} == dict.fromkeys(platforms.FACILITIES, "yes")


def test_a_faked_macos_lacks_every_linux_facility_but_keeps_fork(macos) -> None:
    assert platforms.system_name() == "macOS" and platforms.faked()
    lacking = {name for name in platforms.FACILITIES if platforms.missing(name) is not None}
    assert lacking == set(platforms.FACILITIES) - {"fork"}


def test_windows_has_not_even_fork_and_its_note_names_wsl2(monkeypatch) -> None:
    monkeypatch.setenv(platforms.FAKE_ENV, "win32")
    note = platforms.missing("fork")
    assert note is not None and note.startswith("needs fork(), for a copy of the running process: on Windows")
    assert "WSL2" in note


def test_the_note_names_the_facility_the_system_and_where_to_run_the_cell(macos) -> None:
    assert platforms.missing("procfs") == (
        "needs Linux's /proc, for a process's state letter, CPU time and memory pages: on macOS this cell is skipped; "
        "run the course's image (README, \"Which way should I run it?\"), or WSL2 on Windows, for it")
    with pytest.raises(platforms.FacilityMissing, match=r"^needs Linux's epoll, .* on macOS this cell is skipped"):
        platforms.require("epoll")


def test_an_unknown_facility_is_an_error_that_lists_the_known_ones() -> None:
    with pytest.raises(KeyError, match="the kit knows procfs, procnet"):
        platforms.missing("kqueue")


def test_a_linux_facility_this_kernel_lacks_is_missing_on_linux_too(monkeypatch) -> None:
    monkeypatch.delenv(platforms.FAKE_ENV, raising=False)
    monkeypatch.setitem(platforms.FACILITIES, "epoll", platforms.Facility("Linux's epoll", "waits", lambda: False))
    assert platforms.missing("epoll") == (
        "needs Linux's epoll, for waits: on Linux this cell is skipped; run the course's image "
        "(README, \"Which way should I run it?\"), or WSL2 on Windows, for it")


def test_the_machine_is_described_without_proc(macos, monkeypatch) -> None:
    machine.fingerprint.cache_clear()
    read_text = machine.Path.read_text

    def no_proc(path, *args, **kwargs):  # a read of /proc fails the test; other files read as usual
        assert not str(path).startswith("/proc"), f"{path} was read on a system without /proc"
        return read_text(path, *args, **kwargs)

    monkeypatch.setattr(machine.Path, "read_text", no_proc)
    monkeypatch.setattr(machine.os, "sched_getaffinity", no_proc, raising=False)  # macOS has no CPU affinity
    try:
        line = machine.describe()
        fp = machine.fingerprint()
    finally:
        machine.fingerprint.cache_clear()
    assert " · macOS " in line and "Linux" not in line
    assert fp["cores"] == machine.os.cpu_count() and isinstance(fp["memory_gib"], float) and fp["memory_gib"] > 0
    with pytest.raises(platforms.FacilityMissing, match="needs Linux's /proc/sys"):
        machine.sysctl("net.core.somaxconn", default=[4096])


def test_procfs_and_procnet_readers_skip_with_the_note_and_exists_asks_psutil(macos) -> None:
    for read in (lambda: procfs.status(1), lambda: procfs.cpu_seconds(1), lambda: procfs.memory_rollup(1),
                 lambda: procfs.meminfo_kb("MemTotal"), procnet.tcpext, procnet.read_sockets):
        with pytest.raises(platforms.FacilityMissing, match=r"^needs Linux's /proc(/net)?, .* on macOS this cell is skipped"):
            read()
    assert procfs.exists(machine.os.getpid()) and procfs.cpu_seconds() >= 0  # psutil, and this process's own clock


def test_a_figure_only_linux_measures_is_glued_as_words_off_linux(monkeypatch) -> None:
    glued: dict[str, object] = {}
    monkeypatch.setattr(plots, "glue", glued.__setitem__)
    plots.glue_where_available("here", 1.234, "{:.1f} µs", "epoll")
    plots.glue_where_available("skipped", None, "{:.1f} µs", "epoll")
    assert glued == {"here": "1.2 µs", "skipped": "not measured here (needs Linux's epoll)"}


def test_chapter_13_takes_its_path_without_io_uring_off_linux(macos, monkeypatch) -> None:
    from iolab.topics.completion import support  # the one line chapter 13's check gained; its own tests stay its own

    monkeypatch.delenv(support.FORCE_ENV, raising=False)
    assert support.unavailable("files") == platforms.missing("io_uring")
    assert "needs Linux's io_uring" in str(support.unavailable("sockets"))


def test_chapter_12s_lab_names_the_namespaces_off_linux_not_root(macos) -> None:
    from iolab.netlab import available

    assert available() == platforms.missing("netns")


def test_every_notebooks_setup_cell_runs_on_a_faked_macos_and_says_macos(tmp_path) -> None:
    notebooks = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("[0-9]*.ipynb"))
    setups = [next("".join(c["source"]) for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code")
              for nb in notebooks]
    script = tmp_path / "setups.py"
    script.write_text("import json, sys\nfor source in json.load(open(sys.argv[1])):\n    exec(source, {})\n")
    (tmp_path / "setups.json").write_text(json.dumps(setups))
    env = {**os.environ, platforms.FAKE_ENV: "darwin", "IOLAB_SCALE": "quick", "MPLBACKEND": "Agg"}
    ran = subprocess.run([sys.executable, str(script), str(tmp_path / "setups.json")], capture_output=True, text=True,
                         env=env, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
    lines = ran.stdout.splitlines()
    assert len(notebooks) == 15 and len(lines) == len(notebooks) and all(" · macOS " in line for line in lines), lines
    assert "netlab: needs Linux's network namespaces" in lines[[nb.stem for nb in notebooks].index("12-networks")]


def _run_cells_as_on_macos(tmp_path: Path, notebook: str, ids: list[str], then: str = "", before: str = "") -> str:
    """Run ``notebook``'s setup cell, ``before``, its cells ``ids`` and ``then`` in one namespace on a faked macOS; stdout.

    The cells a chapter marks, without the rest of the notebook (whose runs cost CI time); results go to a
    scratch data folder that sees the course's reference runs.
    """
    course = Path(__file__).resolve().parents[2]
    cells = [c for c in json.loads((course / "notebooks" / notebook).read_text())["cells"] if c["cell_type"] == "code"]
    by_id = {c["id"]: "".join(c["source"]) for c in cells}
    sources = ["".join(cells[0]["source"]), before] + [by_id[i] for i in ids] + [then]
    data = tmp_path / "data"
    data.mkdir()
    for shared in ("reference", "published.csv"):
        (data / shared).symlink_to(course / "data" / shared)
    script = tmp_path / "cells.py"
    script.write_text("import json, sys\nnamespace = {'display': print}\n"
                      "for source in json.load(open(sys.argv[1])):\n    exec(source, namespace)\n")
    (tmp_path / "cells.json").write_text(json.dumps(sources))
    env = {**os.environ, platforms.FAKE_ENV: "darwin", "IOLAB_SCALE": "quick", "MPLBACKEND": "Agg", "IOLAB_DATA": str(data)}
    ran = subprocess.run([sys.executable, str(script), str(tmp_path / "cells.json")], capture_output=True, text=True,
                         env=env, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
    return ran.stdout


def test_chapter_1s_cells_on_proc_print_the_note_and_show_the_reference_run(tmp_path) -> None:
    out = _run_cells_as_on_macos(
        tmp_path, "01-processes.ipynb", ["0a33d40e", "zombie-state", "63ebde38", "902000ee", "5ed1ac96", "01claim1", "01claim2"],
        then="assert [here for _, here in chapter.decided.values()] == [None, None, None], chapter.decided\n"
             "assert 'reference run' in fig._suptitle.get_text()\n")
    assert "waitpid: exit code 3\nafter waitpid: still a process? False\n" in out
    assert out.count("needs Linux's /proc, for a process's state letter") == 2  # the zombie, the copy-on-write sweep
    assert "the reference run: of the" in out


def test_chapter_3s_cells_on_proc_net_print_the_note_and_show_the_reference_run(tmp_path) -> None:
    out = _run_cells_as_on_macos(
        tmp_path, "03-sockets.ipynb", ["91d27ad0", "pred-backlog-given", "873230e6", "5516c4eb", "ac00bf78", "e7aeccb9",
                                       "8b03a1e8", "0552d871", "pred-ack-drop-given", "f1d01a6b", "21eeddca"],
        then="assert [here for _, here in chapter.decided.values()] == [None, None], chapter.decided\n"
             "assert 'reference run' in fig._suptitle.get_text() and len(stairs) and late is None\n")
    assert out.count("needs Linux's /proc/net, for the kernel's table of TCP sockets") == 3  # walk-through, backlog, ACK drops
    assert out.count("needs Linux's /proc/sys, for the kernel's settings") == 1  # the SYN retries (the settings cell's is its value)


def test_chapter_4s_cells_on_proc_print_the_note_and_show_the_reference_run(tmp_path) -> None:
    out = _run_cells_as_on_macos(
        tmp_path, "04-prefork.ipynb", ["45d102bc", "c4c619bb", "dc73e509"],
        then="assert [here for _, here in chapter.decided.values()] == [None], chapter.decided\n"
             "assert set(herd.workers) == {1, 16} and axes[0].get_legend_handles_labels()[1][0].startswith('reference run')\n",
        before="chapter = claims.Claims('04')\n"  # the cell that makes it runs servers under load: not run here
               "spread = results.reference('04-balance')\nbusy = results.reference('04-busy-worker')\nbusy_ms = 1200\n")
    assert out.count("needs Linux's /proc, for a process's state letter") == 2  # the processes' states, the herd


def test_chapter_5s_runs_measure_no_memory_off_linux_and_its_cells_say_so(tmp_path) -> None:
    out = _run_cells_as_on_macos(
        tmp_path, "05-event-loop.ipynb", ["d6da03c9", "695d126f", "914d445b", "a1651318"],
        # The sweep's runs (a cell that runs for minutes) as a run on macOS returns them: without memory.
        before="runs = results.reference('05-wordfreq').drop(columns='machine').assign(peak_rss_mb=np.nan, rss_before_mb=np.nan)\n"
               "counts, versions = sorted(set(runs.connections)), list(wordfreq.CLIENTS)\n"
               "glued = {}\nplots.glue = glued.__setitem__\n",
        then="assert chapter.decided['memory'][1] is None and chapter.decided['keeps-up'][1] is not None\n"
             "words = {k: v for k, v in glued.items() if str(v).startswith('not measured here')}\n"
             "assert sorted(words) == sorted(['05-threads-kb-per-connection', '05-scratch-kb-per-connection',\n"
             "    '05-threads-default-stack', '05-threads-small-stack'] + [f'05-{m}-rss-mb' for m in versions]), words\n")
    assert out.count("needs Linux's /proc, for a process's state letter") == 1  # the thread count


def test_chapter_10s_runs_watched_through_proc_show_the_reference_run_off_linux(tmp_path) -> None:
    out = _run_cells_as_on_macos(
        tmp_path, "10-c10k.ipynb", ["2ffa79ab", "5561f11c", "22f4f67b", "edb4ac2d", "2170f222", "cell-10-sleepers-claims",
                                    "615da3aa", "8f5f68d2", "6132b2f5", "9ad99686", "f033288f", "6caa7ec0", "fc80a6a1",
                                    "b15d2ea3", "86598d5d", "06cc42a5", "d0078477", "66f97887", "bc9198f4", "b8a363a3"],
        before="glued = {}\nplots.glue = glued.__setitem__\n",
        then="assert {r.status for r in runs} == {'skipped'} and [here for _, here in chapter.decided.values()] == [None] * 3\n"
             "assert count == 100_000 and glued['10-asyncio-rss'] > 0 and 'reference run' in fig._suptitle.get_text()\n"
             "words = sorted(k for k, v in glued.items() if str(v).startswith('not measured here (needs'))\n"
             "assert words == sorted(['10-maps-per-thread', '10-thread-rss-kb', '10-max-map-count', '10-pid-max',\n"
             "    '10-predicted-threads', '10-probe-threads', '10-node-fed-run']), words\n")
    assert out.count("needs Linux's /proc, for a process's state letter") == 4  # the sleepers, their phases, the readers, the fed pipe
    assert out.count("needs Linux's /proc/sys, for the kernel's settings") == 2  # the machine's limits, the probe


def test_chapter_11s_kernel_settings_print_the_note_off_linux(tmp_path) -> None:
    out = _run_cells_as_on_macos(tmp_path, "11-shootout.ipynb", ["b90333b8"], then="print(limits.value.tolist())\n")
    assert out.count("needs Linux's /proc/sys, for the kernel's settings") == 1  # the port range, the backlog cap
    assert out.count("not measured here (needs Linux's /proc/sys)") == 2


def test_chapter_7s_thread_memory_shows_the_reference_run_off_linux(tmp_path) -> None:
    out = _run_cells_as_on_macos(
        tmp_path, "07-upstreams.ipynb", ["c0d7720f", "364da4cc", "174071d0"],
        before="glued = {}\nplots.glue = glued.__setitem__\n",
        then="assert 'reference run' in fig._suptitle.get_text() and glued['07-thread-virtual-kib'] > 0\n")
    assert out.count("needs Linux's /proc, for a process's state letter") == 1


def test_chapter_10s_graded_runs_off_linux_pass_their_checks_on_the_other_parts(tmp_path) -> None:
    # The instructor's solutions and checks, hidden tests included, as a student on macOS meets them.
    out = _run_cells_as_on_macos(
        tmp_path, "10-c10k.ipynb", ["2ffa79ab", "ea1b64a7", "83dfb167", "86d40aed", "f095454d", "5ddb9169", "a5f71487",
                                    "77f7c054"],
        then="assert {r.status for r in runs} == {'skipped'} and capped.status == 'skipped'\n"
             "print('longest:', longest_run)\n")
    assert "longest: trio" in out  # the reference run's, which the cells below show


def _check_parts(notebook: str, cell_id: str, namespace: dict[str, object]) -> list[bool]:
    """Each part of a check cell (the instructor's) run as the grader's checker runs it: passed or not."""
    from iolab.homework import checks

    course = Path(__file__).resolve().parents[2]
    cell = next(c for c in json.loads((course / "notebooks" / notebook).read_text())["cells"] if c.get("id") == cell_id)
    return [o.passed for o in checks.run_parts(checks.parts("".join(cell["source"])), namespace, "<check>")]


def test_a_skipped_run_handed_in_scores_only_where_the_checker_has_no_proc() -> None:
    # The skip is decided by no_proc, the setup cell's on the checker's system, never by the run the student hands in.
    from iolab.kit import expect
    from iolab.topics.c10k import ProgramRun

    skipped = ProgramRun("threads", "pipe", 20_000, 60, "skipped", error="needs Linux's /proc")
    answers = {"expect": expect, "address_space_mb": 400, "stacks_allow": 400 * 1024 // 68, "capped": skipped}
    assert _check_parts("10-c10k.ipynb", "77f7c054", {**answers, "no_proc": None}) == [True, True, True, False, False, False]
    assert all(_check_parts("10-c10k.ipynb", "77f7c054", {**answers, "no_proc": "needs Linux's /proc"}))


def test_chapter_7s_stack_exercise_measures_both_sizes_through_psutil_off_linux(tmp_path) -> None:
    out = _run_cells_as_on_macos(
        tmp_path, "07-upstreams.ipynb", ["91aa8515", "668ce474", "3e97e47f"],
        then="print(small_stack.isna().to_dict())\n")
    assert "{'virtual': False, 'resident': False, 'resident private': True, 'page tables': True, 'kernel stack': True}" in out


def test_chapter_1s_partial_write_measures_through_psutil_off_linux(tmp_path) -> None:
    out = _run_cells_as_on_macos(tmp_path, "01-processes.ipynb", ["ex-partial-write-given", "c444e202", "c579fa77"],
                                 then="print(f'copied {copied_mb / (256 * write_fraction):.1f} of what was written')\n")
    assert "copied 1.0 of what was written" in out  # psutil reads this Linux's /proc as macOS's own calls


def test_a_partial_write_is_graded_only_where_the_checker_has_proc() -> None:
    from iolab.kit import expect

    answers = {"expect": expect, "write_fraction": 0.25, "copied_mb": 200.0}  # not a quarter of 256 MiB
    assert _check_parts("01-processes.ipynb", "c579fa77", {**answers, "no_proc": None}) == [True, True, False]
    assert all(_check_parts("01-processes.ipynb", "c579fa77", {**answers, "no_proc": "needs Linux's /proc"}))


def test_chapter_2s_pipe_and_selector_checks_grade_by_the_checkers_own_platform() -> None:
    import selectors

    from iolab.kit import expect
    from iolab.topics.blocking_io import readiness

    forged = {"expect": expect, "pipe_bytes": 2**20, "big_pipe_size": 2**20, "big_pipe_total": 2**19}  # half: no fill
    assert _check_parts("02-blocking.ipynb", "6124d060", {**forged, "no_pipe_size": None}) == [True, True, True, False]
    assert all(_check_parts("02-blocking.ipynb", "6124d060", {**forged, "no_pipe_size": "needs Linux's F_SETPIPE_SZ"}))
    # The name is graded against the checker's own DefaultSelector (epoll, here), and the ratio where it has epoll.
    default = {"expect": expect, "readiness": readiness, "selectors": selectors, "few": 10, "many": 1000}
    poll = {**default, "default_name": "poll", "default_ratio": 20.0}
    assert _check_parts("02-blocking.ipynb", "7355a6b3", {**poll, "no_epoll": None}) == [True, True, False, False]
    assert _check_parts("02-blocking.ipynb", "7355a6b3", {**poll, "no_epoll": "needs Linux's epoll"}) == [True, True, False, True]
    epoll = {**default, "default_name": "epoll", "default_ratio": 1.1}
    assert all(_check_parts("02-blocking.ipynb", "7355a6b3", {**epoll, "no_epoll": None}))


def test_chapter_3s_exercises_run_off_linux_and_pass_their_checks(tmp_path) -> None:
    out = _run_cells_as_on_macos(
        tmp_path, "03-sockets.ipynb", ["e7aeccb9", "pred-syn-retry-code", "pred-syn-retry-check", "fbbe15a1", "a2d13dd4",
                                       "35b37a80", "b05da15a"],
        then="assert connect_s == next(t for t in (0, 1, 2, 3, 4, 5, 7, 11) if t >= free_after_s)  # Linux's default\n"
             "print('answers:', queued_at_zero, time_wait_port == server_port)\n")
    assert "answers: 1 True" in out  # this Linux's backlog + 1, counted without /proc/net; the explanation's port
    assert out.count("needs Linux's /proc/net, for the kernel's table of TCP sockets") == 1  # TIME_WAIT's table


def test_chapter_3s_checks_grade_linuxs_answers_only_where_the_checker_is_linux() -> None:
    from iolab.kit import expect
    from iolab.topics.sockets import listen_backlog

    wrong = {  # check cell: answers that are right in form and wrong on Linux
        "pred-syn-retry-check": ("no_sysctl", {"listen_backlog": listen_backlog, "free_after_s": 1.3, "connect_s": 9.0}),
        "a2d13dd4": ("no_net", {"queued_at_zero": 3}),
        "b05da15a": ("no_net", {"time_wait_port": 50_000, "server_port": 8080}),
    }
    for cell_id, (facility, answers) in wrong.items():
        answers = {**answers, "expect": expect}
        assert _check_parts("03-sockets.ipynb", cell_id, {**answers, facility: None}) == [True, False], cell_id
        assert all(_check_parts("03-sockets.ipynb", cell_id, {**answers, facility: "needs Linux's /proc"})), cell_id
