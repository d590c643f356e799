"""iolab.kit.runners: a fresh loop per call, even where a loop is already running."""

from __future__ import annotations

import asyncio
import concurrent.futures
import time

import pytest
import trio

from iolab.kit import runners


async def loop_type() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_run_asyncio_works_inside_a_running_loop_as_in_a_notebook():
    async def notebook_cell() -> str:
        return runners.run_asyncio(loop_type)  # a plain call, as a cell makes it

    assert asyncio.run(notebook_cell()).startswith("asyncio")


def test_run_asyncio_on_uvloop_runs_a_uvloop_loop():
    assert runners.run_asyncio(loop_type, loop="uvloop").startswith("uvloop")


def test_run_asyncio_rejects_an_unknown_loop():
    with pytest.raises(ValueError, match="uvloop"):
        runners.run_asyncio(loop_type, loop="tokio")


def test_run_asyncio_debug_mode_reaches_the_loop():
    async def debug() -> bool:
        return asyncio.get_running_loop().get_debug()

    assert runners.run_asyncio(debug, debug=True) is True
    assert runners.run_asyncio(debug) is False


def test_run_trio_passes_arguments_and_returns_the_result():
    async def add(a: int, b: int) -> int:
        await trio.sleep(0)
        return a + b

    assert runners.run_trio(add, 2, 3) == 5


def test_exceptions_reach_the_caller():
    async def fails() -> None:
        raise KeyError("boom")

    with pytest.raises(KeyError):
        runners.run_trio(fails)
    with pytest.raises(KeyError):
        runners.run_asyncio(fails)


@pytest.mark.parametrize("runner, sleep", [(runners.run_asyncio, asyncio.sleep), (runners.run_trio, trio.sleep)])
def test_an_interrupted_wait_cancels_the_program_instead_of_leaving_it_running(monkeypatch, runner, sleep):
    def interrupted(self, timeout=None):
        time.sleep(0.2)  # the program is under way in its thread by now
        raise KeyboardInterrupt  # as the notebook's stop button does to the waiting thread

    monkeypatch.setattr(concurrent.futures.Future, "result", interrupted)
    start = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        runner(sleep, 30)  # without the cancellation, leaving would wait the whole 30 s
    assert time.perf_counter() - start < runners.CANCEL_GRACE_S
