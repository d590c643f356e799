"""The bottom layer: tools every experiment uses, about processes, the machine and the results.

- ``procs``: start, fork, watch and stop child processes, always inside a ``with`` block;
- ``channel``: a child started with a JSON spec that reports progress and one JSON result;
- ``procfs``: what ``/proc`` says about a process (state, CPU seconds, memory);
- ``procnet``: what ``/proc/net`` says about TCP sockets (states, accept queues, listen drops);
- ``together``: N children released at one start line, each timing its own job;
- ``guard``: fail a command that leaves processes behind;
- ``platforms``: which Linux-only facilities (``/proc``, epoll, namespaces, io_uring...) are here, and the
  note a cell prints as it skips without one (``IOLAB_FAKE_PLATFORM=darwin`` takes macOS's path);
- ``machine``: this machine's fingerprint and limits (cores, ``sysctl``, ``ulimit -n``, ``DescriptorLimit``);
- ``placement``: pinning a server and its load to separate halves of the cores;
- ``sockets``: listening sockets, the "listening on" line, stopping on a signal;
- ``netns``: run a program, or this thread, inside a named network namespace (chapter 12);
- ``loops`` and ``runners``: the asyncio loops by name, and running asyncio or trio from a notebook;
- ``scale``: the quick/full switch; ``results``: saving measurements; ``plots``: the one figure style;
- ``verdicts`` and ``claims``: two measurements compared (a ratio, its interval, the words it earns),
  and a chapter's claims decided by this run and by the reference run ("What held on this machine");
- ``paths`` and ``cache``: where the course's data is (``IOLAB_DATA``), and the folder for build caches;
- ``lazy``: re-exports imported on first use;
- ``student`` and ``expect``, for the exercises: per-student parameters (``IOLAB_STUDENT``), and what
  a check cell's public asserts ask of an answer; ``magnitudes``: the numbers in a measured value
  (a table's medians), which grading compares and a student edition keeps (``student.record``).

Nothing here imports any other part of ``iolab``.
"""
