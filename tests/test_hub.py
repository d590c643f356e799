"""A real JupyterHub: two students log in, start their servers, run a notebook's setup cell, keep their own files.

The hub is `container/jupyterhub_config_test.py` (book/instructors.md, "A class on JupyterHub", names it):
JupyterHub from `container/hub.lock`, the pins of the course's image, with configurable-http-proxy, the
proxy Zero to JupyterHub runs, from npm (`container/hub-proxy`, locked). Both are installed once into
`_build/hub/<hash of the locks>` (uv and npm, each from its registry and its own cache) and reused while
the locks stay the same. The hub's venv also sees the course's own `.venv` (a `.pth` file), so the
single-user server, its kernels and the homework command run in one environment, as in the image.

The test, through the hub's REST API and each server's own API behind the proxy: the instructor (a
service token) adds two students; each logs in with the class password (a token for the password), starts
their server, which the hub's `pre_spawn_hook` gives a homework folder as the chart's postStart does;
the setup cell of the student edition of notebook 02, read from that folder, runs in a kernel (REST and
websocket) and prints that student's id; a file written through one server is in that student's home
and not visible through the other's, whose token the first server refuses. Every process the hub
started is gone at the end, stopped by the hub itself; whatever it leaves, on a failure too, is killed.

It skips with a note where Node.js and npm, or uv, are missing, or the registries cannot be reached.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest
import requests
import websocket

import iolab
from iolab.kit.procs import ManagedProcess, open_process
from iolab.kit.sockets import free_port

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "container" / "jupyterhub_config_test.py"
HUB_LOCK = ROOT / "container" / "hub.lock"
PROXY_PACKAGE = ROOT / "container" / "hub-proxy"
CACHE = ROOT / "_build" / "hub"
STUDENTS = ("ada", "grace")
NOTEBOOK = "02-blocking.ipynb"
PASSWORD = "a-class-password"  # SharedPasswordAuthenticator wants 8 characters or more
# Installing from the registries takes a few tens of seconds with their caches empty; a hung one skips here.
INSTALL_SECONDS = 240
# The hub's start, a server's spawn (the homework command, then Jupyter) and a kernel's first cell
# (matplotlib, pandas, seaborn) each take seconds on an idle machine and many more on a busy one.
START_SECONDS = 120.0
# The hub stops its proxy on SIGTERM (its servers are stopped before, through the API).
STOP_SECONDS = 30.0

# A hub, a proxy, two servers and two kernels, but nothing timed: it runs beside the other unit tests (its waits
# are long enough for a busy machine), not in the solo stage, which it would lengthen by half a minute. The time
# limit leaves room for the first run's installs (three steps, each skipped past INSTALL_SECONDS).
pytestmark = [pytest.mark.timeout(3 * INSTALL_SECONDS + 300)]


@dataclass(frozen=True)
class HubTools:
    """What runs the hub: the venv's Python (JupyterHub from hub.lock) and configurable-http-proxy."""

    python: Path
    proxy: Path


@dataclass
class Hub:
    """A running hub: its public URL, the instructor's session and the processes it left (once stopped)."""

    url: str
    process: ManagedProcess
    instructor: requests.Session
    left: list[str] = field(default_factory=list)


def run_install_step(argv: list[str], cwd: Path | None = None) -> None:
    """Run one install command; skip the test, with its last output, if it fails (no registry, say)."""
    try:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=INSTALL_SECONDS)
    except subprocess.TimeoutExpired:
        pytest.skip(f"could not install the hub's tools: {' '.join(argv[:3])} ... took over {INSTALL_SECONDS} s")
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-8:])
        pytest.skip(f"could not install the hub's tools ({' '.join(argv[:3])} ... exited {done.returncode}):\n{tail}")


def tools_key() -> str:
    """The cache's name: the locks and the course's interpreter, hashed (a change in any makes a new one)."""
    digest = hashlib.sha256(sys.executable.encode())
    for path in (HUB_LOCK, PROXY_PACKAGE / "package.json", PROXY_PACKAGE / "package-lock.json"):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def install_tools(folder: Path) -> None:
    """A venv from hub.lock and configurable-http-proxy from its npm lock, into ``folder``."""
    uv = Path(sys.executable).with_name("uv")
    npm = shutil.which("npm")
    if not uv.is_file() or npm is None or shutil.which("node") is None:
        pytest.skip("the hub test needs the course's uv (make env) and Node.js with npm (apt install nodejs npm) "
                    "for configurable-http-proxy, JupyterHub's proxy")
    # The tools of older locks go: one copy under _build/hub, not one per lock ever tested.
    shutil.rmtree(CACHE, ignore_errors=True)
    folder.mkdir(parents=True)
    run_install_step([str(uv), "venv", "--quiet", "--python", sys.executable, str(folder / "venv")])
    run_install_step([str(uv), "pip", "install", "--quiet", "--python", str(folder / "venv" / "bin" / "python"),
                      "-r", str(HUB_LOCK)])
    shutil.copytree(PROXY_PACKAGE, folder / "proxy")
    run_install_step([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=folder / "proxy")


def see_the_course(python: Path) -> None:
    """Let the hub's venv import the course's packages after its own, as the image's one environment does."""
    where = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                           capture_output=True, text=True, check=True).stdout.strip()
    course = sysconfig.get_paths()["purelib"]
    # addsitedir, not a bare path: the course's own .pth files (its editable install) are read too.
    (Path(where) / "iolab-course.pth").write_text(f"import site; site.addsitedir({course!r})\n")


@pytest.fixture(scope="module")
def hub_tools() -> HubTools:
    """The hub's tools, installed once per version of the locks under _build/hub and reused."""
    folder = CACHE / tools_key()
    if not (folder / "ready").is_file():
        install_tools(folder)
        (folder / "ready").touch()
    python = folder / "venv" / "bin" / "python"
    see_the_course(python)
    return HubTools(python=python, proxy=folder / "proxy" / "node_modules" / ".bin" / "configurable-http-proxy")


def session(token: str) -> requests.Session:
    """An HTTP session that sends ``token`` the way JupyterHub's API reads it."""
    http = requests.Session()
    http.headers["Authorization"] = f"token {token}"
    return http


def descendants(pid: int) -> list[psutil.Process]:
    """The processes below ``pid`` right now (none if it is gone)."""
    with contextlib.suppress(psutil.NoSuchProcess):
        return psutil.Process(pid).children(recursive=True)
    return []


def kill_all(processes: list[psutil.Process]) -> list[str]:
    """Kill those of ``processes`` still running; what they were, for the report."""
    alive = [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    named = []
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            named.append(" ".join(proc.cmdline())[:100])
            proc.kill()
    psutil.wait_procs(alive, timeout=5)
    return named


@contextlib.contextmanager
def open_hub(tools: HubTools, root: Path) -> Iterator[Hub]:
    """Start the test's hub on free 127.0.0.1 ports; leaving stops it and kills whatever it leaves."""
    ports = [free_port() for _ in range(3)]
    token = uuid.uuid4().hex
    env = {
        "IOLAB_HUB_ROOT": str(root), "IOLAB_HUB_PORTS": ",".join(map(str, ports)), "IOLAB_HUB_PROXY": str(tools.proxy),
        "IOLAB_HUB_TOKEN": token, "IOLAB_HUB_PASSWORD": PASSWORD,
        # The kit the test runs (this worktree's src), for the homework command and the kernels.
        "PYTHONPATH": str(Path(iolab.__file__).resolve().parents[1]),
    }
    argv = [str(tools.python), "-m", "jupyterhub", "-f", str(CONFIG)]
    with open_process(argv, env=env, cwd=str(root), grace=STOP_SECONDS) as process:
        hub = Hub(url=f"http://127.0.0.1:{ports[0]}", process=process, instructor=session(token))
        # Its servers and kernels have sessions of their own: the group's SIGTERM does not reach them.
        try:
            process.wait_for_line(r"JupyterHub is now running", timeout=START_SECONDS)
            yield hub
        finally:
            started = descendants(process.pid)
            process.stop(STOP_SECONDS)
            hub.left = kill_all(started)


def wait_for(check: Callable[[], bool], what: str, hub: Hub, timeout: float = START_SECONDS) -> None:
    """Poll ``check()`` until it is true; fail with the hub's last log lines if it never is."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout:g} s; the hub's log ends:\n{hub.process.tail(30)}")
        time.sleep(0.5)


def log_in(hub: Hub, name: str, password: str) -> requests.Response:
    """The student's own API token for their password (JupyterHub's token request with auth in the body)."""
    return requests.post(f"{hub.url}/hub/api/users/{name}/tokens",
                         json={"auth": {"username": name, "password": password}, "note": "test_hub"}, timeout=30)


def server_ready(student: requests.Session, hub: Hub, name: str) -> bool:
    """Whether ``name``'s default server is up, as the hub's API says."""
    model = student.get(f"{hub.url}/hub/api/users/{name}", timeout=30).json()
    return bool(model.get("servers", {}).get("", {}).get("ready"))


def execute(student: requests.Session, base: str, kernel: str, code: str) -> str:
    """Run ``code`` in a kernel through the server's websocket; what it printed (fails on an error)."""
    url = base.replace("http://", "ws://") + f"api/kernels/{kernel}/channels"
    socket = websocket.create_connection(url, header=[f"Authorization: {student.headers['Authorization']}"],
                                         timeout=START_SECONDS)
    msg_id = uuid.uuid4().hex
    header = {"msg_id": msg_id, "msg_type": "execute_request", "session": uuid.uuid4().hex, "username": "test",
              "version": "5.3"}
    content = {"code": code, "silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False}
    try:
        socket.send(json.dumps({"header": header, "parent_header": {}, "metadata": {}, "content": content,
                                "channel": "shell"}))
        printed: list[str] = []
        while True:
            message = json.loads(socket.recv())
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = message["msg_type"]
            if kind == "stream":
                printed.append(message["content"]["text"])
            elif kind == "error":
                pytest.fail(f"the cell failed: {message['content']['ename']}: {message['content']['evalue']}")
            elif kind == "status" and message["content"]["execution_state"] == "idle":
                return "".join(printed)
    finally:
        socket.close()


def listening_hosts(pid: int) -> set[str]:
    """The addresses that ``pid`` and every process below it listen on (TCP)."""
    hosts = set()
    for proc in [psutil.Process(pid), *descendants(pid)]:
        with contextlib.suppress(psutil.NoSuchProcess):
            hosts |= {c.laddr.ip for c in proc.net_connections("inet") if c.status == psutil.CONN_LISTEN}
    return hosts


def start_servers(hub: Hub) -> dict[str, requests.Session]:
    """The instructor adds the students; each logs in and starts a server; each student's session, once all run."""
    added = hub.instructor.post(f"{hub.url}/hub/api/users", json={"usernames": list(STUDENTS)}, timeout=30)
    assert added.status_code == 201, added.text
    assert log_in(hub, "mallory", PASSWORD).status_code == 403, "a user the instructor did not add logged in"
    assert log_in(hub, STUDENTS[0], "not-the-password").status_code == 403, "a wrong password was taken"
    students = {}
    for name in STUDENTS:
        token = log_in(hub, name, PASSWORD)
        assert token.status_code == 201, token.text
        students[name] = session(token.json()["token"])
        started = students[name].post(f"{hub.url}/hub/api/users/{name}/server", timeout=30)
        assert started.status_code in (201, 202), f"{started.text}; the hub's log ends:\n{hub.process.tail(30)}"
    for name, student in students.items():
        wait_for(lambda: server_ready(student, hub, name), f"{name}'s server ready", hub)
    return students


def run_setup_cells(hub: Hub, students: dict[str, requests.Session]) -> dict[str, str]:
    """Each student's first code cell of their own copy of the notebook, run in a new kernel: what it printed."""
    kernels = {}
    for name, student in students.items():  # both kernels start before either runs: they boot side by side
        kernel = student.post(f"{hub.url}/user/{name}/api/kernels", json={"name": "python3"}, timeout=60)
        assert kernel.status_code == 201, kernel.text
        kernels[name] = kernel.json()["id"]
    printed = {}
    for name, student in students.items():
        base = f"{hub.url}/user/{name}/"
        notebook = student.get(f"{base}api/contents/work/homework/{NOTEBOOK}", timeout=30)
        assert notebook.status_code == 200, f"{name} has no {NOTEBOOK} in work/homework: {notebook.text}"
        setup = next(cell for cell in notebook.json()["content"]["cells"] if cell["cell_type"] == "code")
        source = setup["source"] if isinstance(setup["source"], str) else "".join(setup["source"])
        printed[name] = execute(student, base, kernels[name], source)
        assert student.delete(f"{base}api/kernels/{kernels[name]}", timeout=30).status_code == 204
    return printed


def write_file(student: requests.Session, hub: Hub, owner: str, path: str, text: str) -> requests.Response:
    """Write ``text`` to ``path`` through ``owner``'s server's contents API, as ``student``."""
    return student.put(f"{hub.url}/user/{owner}/api/contents/{path}",
                       json={"type": "file", "format": "text", "content": text}, timeout=30)


def check_own_files(hub: Hub, students: dict[str, requests.Session], homes: Path) -> None:
    """Each student writes through their own server into their own home; the other's server shows none of it."""
    ada, grace = STUDENTS
    for name, student in students.items():
        assert (homes / name / "work" / "homework" / NOTEBOOK).is_file(), f"no homework folder in {name}'s home"
        assert write_file(student, hub, name, "work/notes.txt", f"{name}'s notes").status_code in (200, 201)
        assert (homes / name / "work" / "notes.txt").read_text() == f"{name}'s notes"
    assert write_file(students[ada], hub, ada, "work/only-ada.txt", "mine").status_code in (200, 201)
    assert (homes / ada / "work" / "only-ada.txt").is_file() and not (homes / grace / "work" / "only-ada.txt").exists()
    seen = students[grace].get(f"{hub.url}/user/{grace}/api/contents/work/only-ada.txt", timeout=30)
    assert seen.status_code == 404, f"grace's server shows ada's file: {seen.status_code}"
    for method, owner in ((students[grace].get, ada), (students[ada].get, grace)):
        other = method(f"{hub.url}/user/{owner}/api/contents/work/notes.txt", timeout=30)
        assert other.status_code == 403, f"{owner}'s server let another student read {owner}'s notes: {other.status_code}"


def stop_servers(hub: Hub, students: dict[str, requests.Session]) -> None:
    """Each student stops their server through the hub; wait until the hub says it has stopped."""
    for name, student in students.items():
        stopped = student.delete(f"{hub.url}/hub/api/users/{name}/server", timeout=60)
        assert stopped.status_code in (202, 204), stopped.text
    for name, student in students.items():
        wait_for(lambda: not student.get(f"{hub.url}/hub/api/users/{name}", timeout=30).json()["servers"],
                 f"{name}'s server stopped", hub)


def test_two_students_on_a_real_hub_run_their_own_notebook_and_keep_their_own_files(
        hub_tools: HubTools, tmp_path: Path) -> None:
    with open_hub(hub_tools, tmp_path) as hub:
        students = start_servers(hub)
        printed = run_setup_cells(hub, students)
        for name in STUDENTS:
            assert f"IOLAB_STUDENT={name}: your numbers" in printed[name], printed[name]
        check_own_files(hub, students, tmp_path / "home")
        assert listening_hosts(hub.process.pid) == {"127.0.0.1"}
        stop_servers(hub, students)
    assert hub.left == [], f"the hub left processes running, killed by the test: {hub.left}"
