"""The CPU-bound request of source 000: a Julia set, computed in pure Python.

Pure Python on purpose: the work holds the GIL and one core for its whole duration, like the
JavaScript of source 000, so it shows what CPU-bound requests do to each concurrency model.
``size_for_ms`` turns a cost in milliseconds into an image size on this machine.

The calibration is timed once per process, in the CPU time of the calibrating thread: timed by the
wall clock, ten processes beside four CPU-burning ones on 2 cores read 1.5x to 3.2x the quiet
machine's cost (the thread waited for a core), so their "20 ms" sets cost 6 to 13 ms; by CPU time the
same ten read within 10 % of each other and of the quiet cost. A process that starts servers
passes its own on in ``CALIBRATION_ENV`` (see :func:`iolab.servers.open_server`), so that
``/julia?ms=20`` is the same image in every server it compares.
"""

from __future__ import annotations

import functools
import math
import os
import time

C = complex(-0.8, 0.156)  # a connected, detailed Julia set: every pixel costs some iterations
MAX_ITER = 255  # fits a byte per pixel
CALIBRATION_ENV = "IOLAB_JULIA_NS_PER_PIXEL"


def julia(width: int, height: int, c: complex = C, max_iter: int = MAX_ITER) -> bytes:
    """Escape counts (0..max_iter) of a ``width`` x ``height`` view of the Julia set of ``c``."""
    out = bytearray(width * height)
    for y in range(height):
        im = 2.4 * y / max(height - 1, 1) - 1.2
        for x in range(width):
            z = complex(3.2 * x / max(width - 1, 1) - 1.6, im)
            n = 0
            while n < max_iter and abs(z) <= 2.0:
                z = z * z + c
                n += 1
            out[y * width + x] = n
    return bytes(out)


@functools.cache
def seconds_per_pixel() -> float:
    """This machine's CPU cost of one pixel, best of five runs of a small image (cached per process).

    Timed with ``time.thread_time``: the CPU this thread used, not the time it waited for a core.

    If ``CALIBRATION_ENV`` is set (nanoseconds per pixel), that value instead: the caller's.
    """
    given = os.environ.get(CALIBRATION_ENV)
    if given:
        try:
            return float(given) / 1e9
        except ValueError:
            raise ValueError(f"{CALIBRATION_ENV} must be nanoseconds per pixel, like 3200; got {given!r}") from None
    width, height = 64, 48
    best = math.inf
    for _ in range(5):
        start = time.thread_time()
        julia(width, height)
        best = min(best, time.thread_time() - start)
    return best / (width * height)


def size_for_ms(ms: float) -> tuple[int, int]:
    """A 4:3 image size whose Julia set takes about ``ms`` milliseconds on one core here."""
    pixels = ms / 1000 / seconds_per_pixel()
    height = max(1, round(math.sqrt(pixels * 3 / 4)))
    return max(1, round(height * 4 / 3)), height


def julia_for_ms(ms: float) -> bytes:
    """Compute a Julia set sized to cost about ``ms`` milliseconds of CPU."""
    return julia(*size_for_ms(ms))
