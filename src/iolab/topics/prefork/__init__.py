"""Chapter 4, pre-fork servers.

- ``balance``: how connections spread over the workers, and what the kernel wakes per connection;
- ``occupancy``: where a blocking worker waits while a keep-alive client holds it, and what the next client waits;
- ``mixed_load``: the tiny route's latency while CPU-heavy Julia requests run beside it.
"""
