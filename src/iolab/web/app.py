"""The application every server model runs, sans-I/O: a request in, a response or an *effect* out.

A handler never waits or computes for long itself. The Julia route returns :class:`Compute` and
the upstream route returns :class:`Wait`, and each server model carries the effect out in its own
way (``time.sleep`` or ``await trio.sleep``, the work inline or in a process pool). That is the
point of the course: the same work, different ways to wait for it.

Routes:

- ``/``: a tiny fixed response (the cost of HTTP itself);
- ``/static/NAME``: a file of ``data/static`` (``sprite.png``: 13,263 bytes, like source 000's image);
- ``/julia?ms=20``: a Julia set costing about 20 ms of CPU, as a PGM image;
- ``/upstream?ms=50``: a 50 ms wait, standing in for a call to another service.
"""

from __future__ import annotations

import functools
import mimetypes
import os
import struct
import urllib.parse
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iolab.kit.paths import data_dir
from iolab.web import julia
from iolab.web.http import Request, Response

# The image ships with the course data, next to the measured results, not inside the package.
STATIC_DIR = data_dir() / "static"
# Julia and upstream costs are capped: a request for more than 10 s of CPU or of waiting is a typo,
# and one such request would hold a pre-fork worker or an event loop for minutes.
MAX_MS = 10_000.0
# The size of the image source 000 served, so that our static route moves as many bytes as its did.
SPRITE_BYTES = 13_263
SPRITE_NAME = "sprite.png"

TINY = Response(200, b"Hello, world!\n")
NOT_FOUND = Response(404, b"404 Not Found\n")
METHOD_NOT_ALLOWED = Response(405, b"405 Method Not Allowed: only GET is served\n", headers=(("Allow", "GET"),))


@dataclass(frozen=True, slots=True)
class Wait:
    """An effect: wait ``seconds`` without using the CPU, then answer ``then``."""

    seconds: float
    then: Response


@dataclass(frozen=True, slots=True)
class Compute:
    """An effect: run ``fn(*args)`` (CPU-bound, picklable for a process pool), then answer ``then(result)``."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    then: Callable[[Any], Response]


Outcome = Response | Wait | Compute


def load_static(folder: Path) -> dict[str, Response]:
    """A response per regular file under ``folder`` whose real path stays inside it, by relative name.

    Files are read once, at start: source 000's server answered from the page cache, and the course
    measures concurrency models, not disks. The table is also the safety rule: a request can only
    name a file that was found here, so ``..``, absolute paths and symlinks leading out are 404.
    """
    root = folder.resolve()
    table: dict[str, Response] = {}
    for dirpath, _, filenames in os.walk(root):  # does not descend into symlinked folders
        for filename in filenames:
            path = Path(dirpath) / filename
            real = path.resolve()
            if real.is_file() and real.is_relative_to(root):
                content_type = mimetypes.guess_type(filename)[0] or "application/octet-stream"
                table[path.relative_to(root).as_posix()] = Response(200, real.read_bytes(), content_type)
    return table


def parse_ms(query: str) -> float | None:
    """The ``ms`` parameter of a query string if it is a number in (0, MAX_MS]; else None."""
    values = urllib.parse.parse_qs(query).get("ms", [])
    try:
        ms = float(values[0]) if len(values) == 1 else None
    except ValueError:
        return None
    return ms if ms is not None and 0 < ms <= MAX_MS else None


def _bad_ms(query: str) -> Response:
    return Response(400, f"400 Bad Request: give ?ms= a number in (0, {MAX_MS:g}], not {query!r}\n".encode())


def pgm(width: int, height: int, pixels: bytes) -> Response:
    """A grey-scale Julia set as a binary PGM image (the simplest image format with a header)."""
    return Response(200, b"P5\n%d %d\n255\n" % (width, height) + pixels, "image/x-portable-graymap")


class App:
    """The routes; one instance per server process, built before any fork so children share it."""

    def __init__(self, static_dir: Path = STATIC_DIR) -> None:
        self.static = load_static(static_dir)
        # Calibrate the Julia cost now, once: a worker forked later inherits the measurement, and
        # no request pays for it.
        julia.seconds_per_pixel()

    def handle(self, request: Request) -> Outcome:
        """The response to ``request``, or the effect to carry out before responding."""
        if request.method != "GET":
            return METHOD_NOT_ALLOWED
        path, _, query = request.target.partition("?")
        if path == "/":
            return TINY
        if path.startswith("/static/"):
            return self.static.get(urllib.parse.unquote(path[len("/static/") :]), NOT_FOUND)
        if path == "/julia":
            ms = parse_ms(query)
            if ms is None:
                return _bad_ms(query)
            width, height = julia.size_for_ms(ms)
            return Compute(julia.julia, (width, height), functools.partial(pgm, width, height))
        if path == "/upstream":
            ms = parse_ms(query)
            if ms is None:
                return _bad_ms(query)
            return Wait(ms / 1000, Response(200, b"upstream answered after %g ms\n" % ms))
        return NOT_FOUND


# --- the static image ---------------------------------------------------------------------------


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def sprite_png(size: int = SPRITE_BYTES, width: int = 400, height: int = 300) -> bytes:
    """A grey-scale PNG of a Julia set, padded with a text chunk to exactly ``size`` bytes."""
    counts = julia.julia(width, height)
    shades = bytes(min(255, 8 * n) for n in counts)  # escape counts are small: stretch them to be seen
    rows = b"".join(b"\x00" + shades[y * width : (y + 1) * width] for y in range(height))  # filter 0
    head = b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
    body = _png_chunk(b"IDAT", zlib.compress(rows, 9)) + _png_chunk(b"IEND", b"")
    keyword = b"Comment\x00iolab sprite: the Julia set of c = -0.8+0.156i, padded to the size of source 000's image "
    padding = size - len(head) - len(body) - 12 - len(keyword)
    if padding < 0:
        raise ValueError(f"a {width}x{height} sprite does not fit in {size} bytes; make it smaller")
    return head + _png_chunk(b"tEXt", keyword + b"." * padding) + body


def write_sprite(folder: Path = STATIC_DIR) -> Path:
    """Write ``sprite.png`` into ``folder``; its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / SPRITE_NAME
    path.write_bytes(sprite_png())
    return path
