"""A network between two Linux network namespaces, with a link that delays, jitters, loses and limits.

Chapter 12 runs its servers in one namespace and the load generator in another, so that their
traffic crosses a link with the round-trip time, losses and bandwidth of a real network instead of
the loopback's microseconds:

    server namespace                    forwarder (a process)                 client namespace
    10.77.0.1 [iolab0 TUN] <-- fd --> [ delay, jitter, loss, rate ] <-- fd --> [iolab0 TUN] 10.77.0.2

The usual tool, ``tc qdisc ... netem``, emulates such a link in the kernel. It is a kernel module that
not every kernel has (the course's virtual machines have none), so this link is emulated in user
space instead: each namespace gets a TUN device, an interface whose packets a process reads and
writes through a file descriptor, and a small Python process (:mod:`~iolab.netlab.forwarder`) moves
the packets from one to the other, holding each back for as long as the impairments say
(:mod:`~iolab.netlab.impair`). It behaves the same on every Linux with a TUN device, and it can be
read in one sitting. Its cost: every packet crosses into user space and back through a Python loop,
on the same cores as the servers and the load generator, so where the link adds no delay the forwarder
is part of what is measured; and a process woken to release a packet wakes a little late, which the
forwarder partly makes up for (:mod:`~iolab.netlab.forwarder` says how, with what it measured). The
chapter's links are slow enough that the delays they are set to, not the forwarder, set the pace.

- :mod:`~iolab.netlab.impair`: what happens to each packet (pure logic, testable without root);
- :mod:`~iolab.netlab.namespaces`: create, enter, list and delete namespaces;
- :mod:`~iolab.netlab.forwarder`: the process that moves the packets, and cleans up after the lab;
- :mod:`~iolab.netlab.lab`: :func:`open_netlab`, which puts them together.
"""

from iolab.netlab.impair import Impairments
from iolab.netlab.lab import NetLab, available, cleanup_leftovers, open_netlab

__all__ = ["Impairments", "NetLab", "available", "cleanup_leftovers", "open_netlab"]
