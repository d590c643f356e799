"""Chapter 12: slow clients, timeouts and real (simulated) networks.

- ``link``: how long a round trip across a netlab link takes, against its setting;
- ``distance``: the kit's servers in the lab's server namespace, the load generator in its client
  namespace, measured at one link setting after another (round-trip time, loss), with Little's law
  for what a closed loop of clients can reach;
- ``attacks``: idle and slowloris clients against the servers, with and without timeouts, and what a
  timeout costs a legitimate slow client;
- ``tls``: what TLS adds to a request: round trips before the first byte, and CPU for the handshake.
"""
