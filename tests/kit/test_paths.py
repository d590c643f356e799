"""Where the course's data is: one reader of ``IOLAB_DATA`` for every user of the folder."""

import subprocess
import sys

from iolab.kit import paths, results


def test_iolab_data_moves_the_data_folder_and_results_read_the_same_one(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv(paths.DATA_ENV, raising=False)
    assert paths.data_dir() == paths.COURSE_DATA and (paths.COURSE_DATA / "published.csv").exists()
    monkeypatch.setenv(paths.DATA_ENV, str(tmp_path))
    assert paths.data_dir() == results.data_dir() == tmp_path


def test_the_static_files_the_corpus_and_the_run_times_follow_iolab_data(tmp_path) -> None:
    code = ("from iolab.web import app; from iolab.topics.event_loop import corpus; from iolab.homework import times\n"
            "print(app.STATIC_DIR, corpus.PAIRS_PATH, times.RUN_TIMES, sep='\\n')")
    env = {"PATH": "/usr/bin:/bin", paths.DATA_ENV: str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out.split() == [str(tmp_path / "static"), str(tmp_path / "wordfreq" / "pairs.txt"),
                           str(tmp_path / "homework" / "run-times.csv")]
