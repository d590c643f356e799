"""Chapter 6, asyncio and trio: the loop under load.

- ``looplag``: how late a task that asked to sleep wakes up: the loop's lag;
- ``offload``: CPU-bound work inline, in a thread or in a process pool, beside a loop;
- ``loopbench``: the kit's asyncio server on asyncio's loop and on uvloop, and with CPU work;
- ``structured``: the same small service in asyncio and in trio, so that their diff is the lesson.

The loop built from scratch (chapter 5) is a layer of its own, ``iolab.scratchloop``, since a server
model runs on it too.
"""
