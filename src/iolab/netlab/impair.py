"""The link's impairments as pure logic: for each packet, when it leaves the link, or that it is lost.

Nothing here touches a network: :class:`Direction` is given a packet's arrival time and size and
answers with a release time (or None for a drop). The forwarder calls it for real packets; the tests
and a notebook can call it for made-up ones, and with a seed the answers are the same every run.

One direction of the link, in the order a packet meets them:

1. loss: the packet is dropped with probability ``loss``, independently of every other packet;
2. rate: the packet waits behind the packets before it, then takes ``size * 8 / rate`` seconds to be
   serialized onto the wire; if ``queue_packets`` packets are already waiting, it is dropped (a tail
   drop, what a router's full buffer does);
3. delay and jitter: it then travels for ``delay_ms`` plus a random ``[-jitter_ms, +jitter_ms]``,
   but never overtakes the packet ahead of it. Reordering would make TCP think packets were lost
   (three duplicate ACKs) and retransmit: jitter on a real path mostly comes from queues, which keep
   their order, so this link keeps it too. The price: the mean one-way delay is a bit above
   ``delay_ms`` when the jitter is large compared with the gap between packets.
"""

from __future__ import annotations

import collections
import random
from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Impairments:
    """What one direction of the link does to packets (the same settings serve both directions)."""

    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss: float = 0.0  # probability of a drop, per packet
    rate_mbit: float | None = None  # None: as fast as the forwarder can go
    queue_packets: int = 1000  # packets that may wait for the wire when a rate is set (netem's default limit)

    def __post_init__(self) -> None:
        if self.delay_ms < 0 or self.jitter_ms < 0:
            raise ValueError("delay_ms and jitter_ms must be >= 0")
        if not 0.0 <= self.loss <= 1.0:
            raise ValueError("loss is a probability, 0 <= loss <= 1")
        if self.rate_mbit is not None and self.rate_mbit <= 0:
            raise ValueError("rate_mbit must be > 0 (or None for no limit)")
        if self.queue_packets < 1:
            raise ValueError("queue_packets must be >= 1")


@dataclass
class Counters:
    """What happened to the packets of one direction."""

    passed: int = 0
    lost: int = 0  # dropped at random (``loss``)
    overflowed: int = 0  # dropped because the queue for the wire was full
    bytes: int = 0  # bytes of the packets that passed


@dataclass
class Direction:
    """One direction of the link: decides, packet by packet, when it leaves or whether it is dropped."""

    impairments: Impairments
    rng: random.Random = field(default_factory=random.Random)
    counters: Counters = field(default_factory=Counters)
    # When the wire is free again, and when each packet still queued for it will have left it.
    _wire_free: float = 0.0
    _on_wire: collections.deque[float] = field(default_factory=collections.deque)
    _last_release: float = 0.0

    def admit(self, now: float, size: int) -> float | None:
        """A packet of ``size`` bytes arrives at ``now`` (seconds): its release time, or None if dropped."""
        imp = self.impairments
        if imp.loss and self.rng.random() < imp.loss:
            self.counters.lost += 1
            return None
        sent = now
        if imp.rate_mbit is not None:
            while self._on_wire and self._on_wire[0] <= now:
                self._on_wire.popleft()
            if len(self._on_wire) >= imp.queue_packets:
                self.counters.overflowed += 1
                return None
            sent = max(now, self._wire_free) + size * 8 / (imp.rate_mbit * 1e6)
            self._wire_free = sent
            self._on_wire.append(sent)
        travel = imp.delay_ms / 1e3
        if imp.jitter_ms:
            travel = max(0.0, travel + self.rng.uniform(-imp.jitter_ms, imp.jitter_ms) / 1e3)
        release = max(sent + travel, self._last_release)  # FIFO: never before the packet ahead
        self._last_release = release
        self.counters.passed += 1
        self.counters.bytes += size
        return release


def simulate(impairments: Impairments, arrivals: Iterable[tuple[float, int]], seed: int | None = None) -> list[float | None]:
    """Release times (None: dropped) of packets given as ``(arrival time in s, size in bytes)``, in order."""
    direction = Direction(impairments, random.Random(seed))
    return [direction.admit(t, size) for t, size in arrivals]
