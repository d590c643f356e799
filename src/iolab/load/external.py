"""Other people's tools beside the kit's: the load generators ``wrk`` and ``ab``, and ``nginx``.

All three are optional (Debian packages ``wrk``, ``apache2-utils``, ``nginx-light``): :func:`have` says whether one is
installed, and the runners raise :class:`ToolMissing` with the package to install when it is not.
Each load runner returns the same few figures the kit's load generator reports, parsed from the tool's
own text output, so a notebook can put the three side by side in one table.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from iolab.kit.sockets import free_port

PACKAGES = {"wrk": "wrk", "ab": "apache2-utils", "nginx": "nginx-light"}
# Past the run itself: start-up, and the time a tool takes to close thousands of connections.
MARGIN_S = 30.0
_UNITS_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}


class ToolMissing(RuntimeError):
    """The tool is not installed; the message names the package that provides it."""


@dataclass(frozen=True)
class ToolResult:
    """What a tool reported: requests/s, answers, failures and latency percentiles (ms, None if not shown)."""

    tool: str
    connections: int
    seconds: float
    requests: int
    failed: int
    rps: float
    p50_ms: float | None
    p99_ms: float | None
    output: str  # the tool's whole report, for the reader

    def row(self) -> dict[str, object]:
        """The figures without the raw output, for a DataFrame row."""
        return {k: v for k, v in asdict(self).items() if k != "output"}


def have(tool: str) -> bool:
    """Whether ``tool`` (``wrk`` or ``ab``) is on the PATH."""
    return shutil.which(tool) is not None


def missing_note(tool: str) -> str:
    """One line telling the reader what to install to run the cell that needs ``tool``."""
    return f"skipped: `{tool}` is not installed (Debian/Ubuntu: apt install {PACKAGES[tool]}); the kit's own figures stand alone."


def _run(argv: list[str], timeout: float) -> str:
    if not have(argv[0]):
        raise ToolMissing(missing_note(argv[0]))
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{argv[0]} did not finish within {timeout:.0f} s and was stopped") from None
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed (exit {done.returncode}): {(done.stderr or done.stdout).strip()[-500:]}")
    return done.stdout


def _ms(value: str, unit: str) -> float:
    return float(value) * _UNITS_MS[unit]


def parse_wrk(text: str, connections: int) -> ToolResult:
    """The figures of a ``wrk --latency`` report."""
    total = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m)", text)
    rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
    if not (total and rps):
        raise ValueError(f"not a wrk report:\n{text[:500]}")
    percentiles = {p: _ms(v, u) for p, v, u in re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s|m)\s*$", text, re.M)}
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    failed = (sum(map(int, errors.groups())) if errors else 0) + (int(non2xx[1]) if non2xx else 0)
    return ToolResult(
        "wrk", connections, _ms(total[2], total[3]) / 1000, int(total[1]), failed, float(rps[1]),
        percentiles.get("50"), percentiles.get("99"), text,
    )


def parse_ab(text: str, connections: int) -> ToolResult:
    """The figures of an ``ab`` report (its percentiles are whole milliseconds)."""
    fields = dict(re.findall(r"^([A-Z][\w -]+):\s+([\d.]+)", text, re.M))
    if "Requests per second" not in fields:
        raise ValueError(f"not an ab report:\n{text[:500]}")
    percentiles = dict(re.findall(r"^\s+(50|99)%\s+(\d+)", text, re.M))
    return ToolResult(
        "ab", connections, float(fields["Time taken for tests"]), int(fields["Complete requests"]),
        int(fields["Failed requests"]), float(fields["Requests per second"]),
        float(percentiles["50"]) if "50" in percentiles else None,
        float(percentiles["99"]) if "99" in percentiles else None, text,
    )


def run_wrk(url: str, connections: int, seconds: float, threads: int = 1) -> ToolResult:
    """``wrk -t THREADS -c CONNECTIONS -d SECONDS --latency URL`` (keep-alive, closed loop)."""
    threads = max(1, min(threads, connections))
    argv = ["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{max(1, round(seconds))}s", "--latency", url]
    return parse_wrk(_run(argv, seconds + MARGIN_S), connections)


def run_ab(url: str, connections: int, seconds: float, keepalive: bool = True) -> ToolResult:
    """``ab -t SECONDS -c CONNECTIONS [-k] URL``, as source 000 ran it (at most 5,000,000 requests)."""
    argv = ["ab", "-q", "-r", "-t", str(max(1, round(seconds))), "-n", "5000000", "-c", str(connections)]
    return parse_ab(_run(argv + (["-k"] if keepalive else []) + [url], seconds + MARGIN_S), connections)


# nginx serves the reference figure for "how fast can a server on this machine be": one worker
# process, like the kit's one-process models, the same tiny body and the same static file.
NGINX_CONF = """\
{user}worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log stderr warn;
events {{ worker_connections 20000; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy; fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi; scgi_temp_path {tmp}/scgi;
    keepalive_requests 1000000;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location = / {{ default_type text/plain; return 200 "hello, world\\n"; }}
        location /static/ {{ alias {static}/; }}
    }}
}}
"""


@contextlib.contextmanager
def open_nginx(static_dir: Path | None = None) -> Iterator[str]:
    """Run nginx (one worker) on a free 127.0.0.1 port; yields its base URL. Stopped on exit."""
    from iolab.kit.procs import open_process
    from iolab.web.app import STATIC_DIR

    if not have("nginx"):
        raise ToolMissing(missing_note("nginx"))
    with tempfile.TemporaryDirectory(prefix="iolab-nginx-") as tmp:
        port = free_port()
        conf = Path(tmp) / "nginx.conf"
        # Started as root, nginx's worker would drop to "nobody", who may not read the static file
        # below a private folder (a clone in `mktemp -d`): keep the worker as this user.
        user = f"user {pwd.getpwuid(os.geteuid()).pw_name};\n" if os.geteuid() == 0 else ""
        conf.write_text(NGINX_CONF.format(user=user, tmp=tmp, port=port, static=static_dir or STATIC_DIR))
        with open_process([shutil.which("nginx") or "nginx", "-p", tmp, "-c", str(conf)]) as process:
            _wait_for_port(port, process)
            yield f"http://127.0.0.1:{port}"


def _wait_for_port(port: int, process, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"nginx exited at start-up: {process.tail()}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nginx did not listen on port {port} within {timeout:.0f} s: {process.tail()}")
