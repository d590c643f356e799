"""What the servers serve: the HTTP protocol (``http``, sans-I/O), the routes (``app``) and the CPU-bound job (``julia``).

Every server model, and the upstreams and database services, speak HTTP through ``http``; none of
this package waits for anything, so each model can wait its own way. It imports only from ``kit``.
"""
