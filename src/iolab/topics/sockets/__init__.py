"""Sockets (chapter 3): a TCP connection from the kernel's side, the listen backlog, and what a connection costs.

One idea per module; the kernel's socket table they read is the kit's ``procnet``:

- ``lifecycle``: bind, listen, connect, accept, send, recv, close, and the TCP states after each call;
- ``listen_backlog``: a listener that never accepts, where its queue stops, and what a client that met
  the full queue waits (the SYN retries);
- ``accept_overflow``: the other way a full accept queue drops a connection: after the handshake,
  with the client's connect() already done;
- ``connections``: HTTP over a plain socket, and a new connection per request against keep-alive.
"""
