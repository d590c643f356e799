"""iolab.scratchloop, steps 1-6: callbacks, generator coroutines, the Future, the Task, nesting, timers."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

import pytest

from iolab.scratchloop import callbacks, coroutines, nesting, task
from iolab.scratchloop.future import Future
from iolab.scratchloop.timers import TimerHeap

PAYLOAD = b"word " * 2000  # 10 kB: several reads on some kernels
REQUEST = b"hello\n"


@contextlib.contextmanager
def serving(payload: bytes, clients: int) -> Iterator[tuple[str, int]]:
    """A listener in a thread that reads each of ``clients`` clients' request, answers ``payload`` and closes."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(10)

    def serve() -> None:
        for _ in range(clients):
            conn, _ = listener.accept()
            with conn:
                assert conn.recv(100) == REQUEST
                conn.sendall(payload)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()
    finally:
        thread.join(10)
        listener.close()


def closed_port() -> tuple[str, int]:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        return sock.getsockname()  # nobody listens there once closed


def test_step1_callbacks_fetch_everything_the_server_sends() -> None:
    got: list[bytes] = []
    loop = callbacks.CallbackLoop()
    with serving(PAYLOAD, 3) as address:
        for _ in range(3):
            callbacks.fetch(loop, address, REQUEST, got.append)
        loop.run(until=lambda: len(got) == 3, timeout=10)
    loop.close()
    assert got == [PAYLOAD] * 3


def test_step1_run_gives_up_after_its_timeout() -> None:
    loop = callbacks.CallbackLoop()
    with pytest.raises(TimeoutError):
        loop.run(until=lambda: False, timeout=0.05)
    loop.close()


def test_step2_send_resumes_a_generator_with_a_value() -> None:
    total = coroutines.running_total()
    assert next(total) == 0
    assert [total.send(x) for x in (1, 2, 3.5)] == [1, 3, 6.5]


def test_step2_a_driver_answers_what_the_coroutine_waits_for() -> None:
    with serving(PAYLOAD, 1) as address:
        assert coroutines.run_blocking(coroutines.fetch(address, REQUEST)) == PAYLOAD


def test_step3_a_callback_added_after_the_result_still_runs() -> None:
    future, seen = Future("x"), []
    future.add_done_callback(lambda f: seen.append(("before", f.result())))
    future.set_result(42)
    future.add_done_callback(lambda f: seen.append(("after", f.result())))
    assert seen == [("before", 42), ("after", 42)]


def test_step3_a_future_is_set_once_and_carries_exceptions() -> None:
    future = Future("x")
    with pytest.raises(RuntimeError, match="no result yet"):
        future.result()
    future.set_exception(ConnectionRefusedError("nope"))
    with pytest.raises(ConnectionRefusedError):
        future.result()
    with pytest.raises(RuntimeError, match="already done"):
        future.set_result(1)


def test_step4_tasks_drive_many_coroutines_on_one_loop() -> None:
    loop = callbacks.CallbackLoop()
    with serving(PAYLOAD, 5) as address:
        tasks = [task.Task(task.fetch(loop, address, REQUEST)) for _ in range(5)]
        loop.run(until=lambda: all(t.done() for t in tasks), timeout=10)
    loop.close()
    assert [t.result() for t in tasks] == [PAYLOAD] * 5


def test_step4_a_task_may_only_wait_on_futures() -> None:
    def bad():
        yield "not a future"

    with pytest.raises(TypeError, match="may only wait on a Future"):
        task.Task(bad()).result()


@pytest.mark.parametrize("fetch", [nesting.fetch_generator, nesting.fetch_async], ids=["yield-from", "await"])
def test_step5_nested_coroutines_return_through_the_task(fetch) -> None:
    loop = callbacks.CallbackLoop()
    with serving(PAYLOAD, 2) as address:
        tasks = [task.Task(fetch(loop, address, REQUEST)) for _ in range(2)]
        loop.run(until=lambda: all(t.done() for t in tasks), timeout=10)
    loop.close()
    assert [t.result() for t in tasks] == [PAYLOAD] * 2


def test_step5_a_refused_connection_raises_inside_the_coroutine() -> None:
    loop = callbacks.CallbackLoop()

    async def try_connect() -> str:
        try:
            await nesting.connect_async(loop, closed_port())
        except ConnectionRefusedError:  # OSError(ECONNREFUSED, ...) is this subclass
            return "refused"
        return "connected"

    t = task.Task(try_connect())
    loop.run(until=t.done, timeout=10)
    loop.close()
    assert t.result() == "refused"


def test_step6_timers_come_out_in_time_order_ties_in_insertion_order() -> None:
    heap, fired = TimerHeap(), []
    for when, name in [(3.0, "c"), (1.0, "a"), (2.0, "b1"), (2.0, "b2")]:
        heap.push(when, fired.append, name)
    assert heap.timeout(now=0.5) == 0.5
    for fn, args in heap.pop_due(now=2.0):
        fn(*args)
    assert fired == ["a", "b1", "b2"] and len(heap) == 1
    assert heap.timeout(now=10.0) == 0.0 and TimerHeap().timeout(0.0) is None
