"""Chapter 2, blocking and non-blocking I/O.

- ``nonblocking``: O_NONBLOCK, EAGAIN, short reads and writes, and the loop that handles them;
- ``readiness``: what one select/poll/epoll wait costs, and what spinning costs instead;
- ``watch``: a process's state and CPU over time, and the two programs that show blocking vs running.
"""
