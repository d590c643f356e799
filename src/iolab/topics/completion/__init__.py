"""Chapter 13, completion-based I/O: io_uring against readiness, on files and on sockets.

- ``support``: whether io_uring is there, and if not, why (``IOLAB_NO_IO_URING=1`` forces "not there");
- ``files``: random 4 KiB reads four ways: one blocking thread, a thread pool, io_uring, fio;
- ``tiny_http``: the one answer the three servers give, so that only their waiting differs;
- ``epoll_server``, ``uvloop_server``, ``uring_server``: readiness in Python, readiness in C, completions;
- ``c_programs``: the servers in C (``c/``), beside which the Python ones' cost is measured, built on first use;
- ``server_process``: the table of them (``SERVERS``), and one in a process of its own
  (``python -m iolab.topics.completion.server_process``);
- ``syscall_counts``: system calls counted from outside, with ``strace -c``;
- ``server_load``: a server under the course's load generator, its calls counted;
- ``experiments``: the chapter's tables, what the notebook and ``python -m iolab completion`` call; its
  ``WAYS`` is the table of ways to read a file.
"""
