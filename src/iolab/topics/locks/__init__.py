"""Chapter 8, locking costs.

- ``harness``: threads released together from a start line, and a thread that owns what others send;
- ``counters``: a shared counter batched, locked per increment, or owned by one thread (Python);
- ``golocks``: the same counters in Go, with a mutex and with atomics (optional: needs ``go``);
- ``races``: which ways of adding lose updates without a lock, under the GIL;
- ``process_counter``: a counter in shared memory, incremented by processes;
- ``slowstream``: a lock held around a slow stream vs a queue to the thread that owns it.
"""
