"""A minimal Node.js HTTP server, for source 000's comparison with Node (optional: needs ``node``).

Node runs JavaScript on one event loop in one process, like the kit's asyncio server. This one
serves two of the kit's routes, ``/`` (the tiny answer) and ``/static/sprite.png`` (the same 13,263
bytes, read once at start), and names its process in ``X-Worker``. The script is written to a
temporary folder at start, so the course ships no JavaScript file to keep in step.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from iolab.kit import channel, procs
from iolab.kit.procs import START_SECONDS
from iolab.kit.sockets import HOST, LISTENING
from iolab.servers import Server
from iolab.web.app import SPRITE_NAME, STATIC_DIR, TINY

SCRIPT = """\
const http = require("http");
const fs = require("fs");
const path = require("path");
const [staticDir, spriteName, tiny, listening] = process.argv.slice(2);
const sprite = fs.readFileSync(path.join(staticDir, spriteName));
const headers = (type, body) => ({"Content-Type": type, "Content-Length": Buffer.byteLength(body), "X-Worker": process.pid});
const server = http.createServer((req, res) => {
  if (req.url === "/") {
    res.writeHead(200, headers("text/plain; charset=utf-8", tiny));
    res.end(tiny);
  } else if (req.url === "/static/" + spriteName) {
    res.writeHead(200, headers("image/png", sprite));
    res.end(sprite);
  } else {
    res.writeHead(404, headers("text/plain", "404 Not Found\\n"));
    res.end("404 Not Found\\n");
  }
});
server.keepAliveTimeout = 60000;  // Node closes idle keep-alive connections after 5 s by default
server.listen(0, "%(host)s", 1024, () => {
  console.log(listening.replace("{host}", "%(host)s").replace("{port}", server.address().port));
});
process.on("SIGTERM", () => process.exit(0));
""" % {"host": HOST}


def have_node() -> bool:
    """Whether ``node`` is on the PATH."""
    return shutil.which("node") is not None


MISSING_NOTE = "skipped: `node` is not installed (Debian/Ubuntu: apt install nodejs); the Python servers stand alone."


@dataclass(frozen=True)
class NodeVariant:
    """The Node server as a variant for :func:`iolab.load.comparisons.load_matrix`."""

    label: str = "node"

    def open(self) -> contextlib.AbstractContextManager[Server]:
        """Start it; see :func:`open_node_server`."""
        return open_node_server()


@contextlib.contextmanager
def open_node_server(static_dir: Path = STATIC_DIR) -> Iterator[Server]:
    """Start the Node server on a free port and wait until it listens; leaving the block stops it."""
    node = shutil.which("node")
    if node is None:
        raise FileNotFoundError(MISSING_NOTE)
    with tempfile.TemporaryDirectory(prefix="iolab-node-") as folder:
        script = Path(folder) / "server.js"
        script.write_text(SCRIPT)
        argv = [node, str(script), str(static_dir), SPRITE_NAME, TINY.body.decode(), LISTENING]
        with procs.open_process(argv) as process:
            yield Server.at(channel.wait_listening(process, START_SECONDS), "node", process)
