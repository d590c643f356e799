"""Chapter 4, pre-fork servers.

- ``balance``: how connections spread over the workers, and what the kernel wakes per connection;
- ``occupancy``: a blocking worker belongs to its keep-alive client until that client leaves;
- ``mixed_load``: the tiny route's latency while CPU-heavy Julia requests run beside it.
"""
