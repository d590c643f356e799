"""Chapter 1, processes and fork: what fork() copies at once and later (``copy_on_write``), and what
creating a process, a thread and an asyncio task costs (``creation_costs``).

Running one job in N processes at once is the kit's ``together``.
"""
