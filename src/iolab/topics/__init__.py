"""The chapters' experiments: one package per concept, in the order of the course.

- ``processes``: fork, copy-on-write, what creating a process, thread or task costs (chapter 1);
- ``blocking_io``: blocking and non-blocking descriptors, readiness, process states (chapter 2);
- ``sockets``: a TCP connection by hand, its states, the listen backlog (chapter 3);
- ``prefork``: how a pre-fork server shares connections, keep-alive occupancy, CPU-heavy requests (chapter 4);
- ``event_loop``: source 004's word-frequency clients, threads vs event loops (chapter 5);
- ``asyncio_trio``: loop lag, CPU work beside a loop, asyncio vs trio (chapter 6);
- ``upstreams``: threads vs async when upstreams are slow or down (chapter 7);
- ``locks``: what sharing a counter or a stream costs (chapter 8);
- ``databases``: connections, pools and prepared statements against PostgreSQL (chapter 9);
- ``c10k``: 100,000 sleepers in every runtime, and what limits them (chapter 10);
- ``measuring``: what the instruments themselves cost (chapter 11);
- ``networks``: slow clients, timeouts, distance and TLS across the netlab's simulated network (chapter 12);
- ``completion``: io_uring against readiness, on files and on sockets (chapter 13).

A topic imports from the layers below (``kit``, ``scratchloop``, ``web``, ``netlab``, ``servers``, ``load``)
and never from another topic: what two topics share moves down, to the lowest layer that has what it uses.
"""
