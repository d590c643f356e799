"""A busy machine for the honest stage (``test_homework``): a process that burns a core, or another stage."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import psutil

# The burner must have had a core for most of the batch that no other stage ran beside, or the machine was not busy;
# a batch that the other stage ran beside to its end (but for the watcher's half-second polls) was busy throughout.
BURNER_SHARE = 0.5
BESIDE_TO_THE_END_S = 2.0


class Busy:
    """Keeps the machine busy while a batch grades: a process that burns a core.

    `make test` runs this stage beside the unit stage that shares the machine (two pytest workers),
    whose process id ``IOLAB_HONEST_BESIDE`` names: while that process runs it is the load, and the burner
    is held stopped, so that the two stages share the cores instead of a burner taking one. When it ends
    (or with no such variable, as under `make honest`), the burner runs. ``beside`` is how long the other
    stage ran during the batch, ``burnt`` the burner's CPU seconds and ``wall`` the batch's length.
    """

    def __init__(self, beside: str | None) -> None:
        try:
            self._beside = psutil.Process(int(beside)) if beside else None
        except (ValueError, psutil.NoSuchProcess):
            self._beside = None
        self.wall = self.beside = self.burnt = 0.0
        self._done = threading.Event()

    def __enter__(self) -> Busy:
        self._burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        self._started = time.monotonic()
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._watcher.start()
        return self

    def _beside_runs(self) -> bool:
        # make's shell waits for the other stage only after this one: until then it ends as a zombie.
        try:
            return self._beside is not None and self._beside.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    def _watch(self) -> None:
        burner = psutil.Process(self._burner.pid)
        if self._beside_runs():
            burner.suspend()
            while not self._done.wait(0.5) and self._beside_runs():
                pass
            self.beside = time.monotonic() - self._started
            burner.resume()

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._watcher.join()
        self.wall = time.monotonic() - self._started
        self.burnt = sum(psutil.Process(self._burner.pid).cpu_times()[:2])
        self._burner.kill()
        self._burner.wait()

    def was_busy(self) -> bool:
        """Whether the batch had a busy machine throughout: the other stage beside it, the burner for the rest."""
        alone = self.wall - self.beside
        return alone < BESIDE_TO_THE_END_S or self.burnt > BURNER_SHARE * alone
