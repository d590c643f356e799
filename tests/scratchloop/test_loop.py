"""iolab.scratchloop.loop (step 7): the ready queue, timers, sockets, tracing, and the public face."""

from __future__ import annotations

import socket
import time

import pytest

import iolab.scratchloop
from iolab.scratchloop import loop as scratch_loop
from iolab.scratchloop import trace
from iolab.scratchloop.loop import EventLoop, Semaphore, gather


def run(main, *args, trace_steps: bool = False, timeout: float = 10.0):
    loop = EventLoop(trace=trace_steps)
    try:
        return loop.run_until_complete(main(loop, *args), timeout), loop
    finally:
        loop.close()


def test_sleeping_tasks_wake_in_time_order_and_overlap() -> None:
    woke: list[float] = []

    async def sleeper(loop: EventLoop, seconds: float) -> None:
        await loop.sleep(seconds)
        woke.append(seconds)

    async def main(loop: EventLoop) -> None:
        await gather(*(loop.create_task(sleeper(loop, s)) for s in (0.15, 0.05, 0.10)))

    start = time.perf_counter()
    run(main)
    assert woke == [0.05, 0.10, 0.15]
    assert time.perf_counter() - start < 0.15 * 3  # together, not one after the other


def test_the_ready_queue_alternates_tasks_that_yield() -> None:
    order: list[str] = []

    async def worker(loop: EventLoop, name: str) -> None:
        for _ in range(3):
            order.append(name)
            await loop.sleep(0)

    async def main(loop: EventLoop) -> None:
        await gather(loop.create_task(worker(loop, "a")), loop.create_task(worker(loop, "b")))

    run(main)
    assert order == ["a", "b", "a", "b", "a", "b"]


def test_sockets_echo_between_two_tasks_of_one_loop() -> None:
    big = bytes(range(256)) * 8192  # 2 MiB: more than a socket buffer, so sendall must wait for writable

    async def server(loop: EventLoop, listener: socket.socket) -> None:
        conn, _ = await loop.sock_accept(listener)
        with conn:
            while data := await loop.sock_recv(conn):
                await loop.sock_sendall(conn, data)

    async def client(loop: EventLoop, address) -> bytes:
        with socket.socket() as sock:
            sock.setblocking(False)
            await loop.sock_connect(sock, address)
            await loop.sock_sendall(sock, big)
            sock.shutdown(socket.SHUT_WR)
            chunks = []
            while data := await loop.sock_recv(sock):
                chunks.append(data)
            return b"".join(chunks)

    async def main(loop: EventLoop) -> bytes:
        with socket.create_server(("127.0.0.1", 0)) as listener:
            listener.setblocking(False)
            serving = loop.create_task(server(loop, listener))
            echoed = await client(loop, listener.getsockname())
            await serving
            return echoed

    echoed, _ = run(main)
    assert echoed == big


def test_a_failed_task_raises_where_it_is_awaited() -> None:
    async def fails(loop: EventLoop) -> None:
        await loop.sleep(0.01)
        raise ValueError("boom")

    async def main(loop: EventLoop) -> str:
        try:
            await loop.create_task(fails(loop))
        except ValueError as error:
            return str(error)
        return "no error"

    assert run(main)[0] == "boom"


def test_a_refused_connect_raises_connection_refused() -> None:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        address = sock.getsockname()

    async def main(loop: EventLoop) -> None:
        with socket.socket() as sock:
            sock.setblocking(False)
            await loop.sock_connect(sock, address)

    with pytest.raises(ConnectionRefusedError):
        run(main)


def test_run_until_complete_is_bounded_in_time_and_detects_deadlock() -> None:
    async def forever(loop: EventLoop) -> None:
        await loop.sleep(60)

    start = time.perf_counter()
    with pytest.raises(TimeoutError):
        run(forever, timeout=0.1)
    assert time.perf_counter() - start < 2

    async def stuck(loop: EventLoop) -> None:
        await iolab.scratchloop.Future("never")

    with pytest.raises(RuntimeError, match="deadlock"):
        run(stuck)


def test_wait_readable_with_a_timeout_returns_false_when_nothing_comes() -> None:
    async def main(loop: EventLoop) -> tuple[bool, bool]:
        a, b = socket.socketpair()
        with a, b:
            quiet = await loop.wait_readable(a, timeout=0.05)
            b.send(b"x")
            return quiet, await loop.wait_readable(a, timeout=5)

    assert run(main)[0] == (False, True)


def test_a_semaphore_admits_at_most_its_value() -> None:
    inside, most = 0, 0

    async def guarded(loop: EventLoop, gate: Semaphore) -> None:
        nonlocal inside, most
        async with gate:
            inside += 1
            most = max(most, inside)
            await loop.sleep(0.01)
            inside -= 1

    async def main(loop: EventLoop) -> None:
        gate = Semaphore(3)
        await gather(*(loop.create_task(guarded(loop, gate)) for _ in range(10)))

    run(main)
    assert most == 3 and inside == 0


def test_the_trace_records_which_task_ran_and_why_it_yielded() -> None:
    async def napper(loop: EventLoop) -> str:
        await loop.sleep(0.01)
        return "ok"

    async def main(loop: EventLoop) -> list[str]:
        return await gather(loop.create_task(napper(loop), "napper"))

    result, loop = run(main, trace_steps=True)
    frame = trace.to_frame(loop.trace)
    steps = frame[frame.task == "napper"]
    assert result == ["ok"]
    assert list(steps.waits_for) == ["sleep 0.01 s", "done"]
    assert list(steps.woke_by) == ["start", "sleep 0.01 s"]
    assert list(frame[frame.task == "main"].kind) == ["task", "done"]  # main waited for the napper
    assert (frame.end_ms >= frame.start_ms).all() and frame.start_ms.is_monotonic_increasing


def test_the_final_loop_stays_well_under_300_lines() -> None:
    with open(scratch_loop.__file__) as source:
        assert len(source.readlines()) < 300


def test_run_gives_main_a_fresh_loop_and_returns_what_main_returns() -> None:
    async def main(loop: EventLoop, value: int) -> int:
        await loop.sleep(0)
        return value * 2

    assert iolab.scratchloop.run(main, 21, timeout=5) == 42
