"""A JupyterHub on one machine, as the course's Zero to JupyterHub config.yaml (book/instructors.md) sets one up.

tests/test_hub.py runs it: `jupyterhub -f container/jupyterhub_config_test.py`, from the venv made from
container/hub.lock (the image's pins), with configurable-http-proxy from npm as the proxy, as the chart's
proxy pod runs it. What the chart does with Kubernetes is done here with local processes:

- a student logs in with the class's shared password (SharedPasswordAuthenticator, which JupyterHub 5.3
  made the successor of DummyAuthenticator's password), once the instructor has added them;
- each student's single-user server is a local process (SimpleLocalProcessSpawner) whose home is a
  folder of its own, as the chart gives each pod its own volume: `jupyterhub-singleuser`, as `cmd` says;
- IOLAB_STUDENT is the user's name (`hub.extraConfig`), IOLAB_SCALE=quick (`singleuser.extraEnv`);
- the homework folder is made before the server starts by the chart's postStart command, run by
  `pre_spawn_hook` in the student's environment (the pod's postStart runs beside the server's start).

Everything listens on 127.0.0.1. The test passes what differs per run in the environment: IOLAB_HUB_ROOT
(a temporary folder: the hub's database, the students' homes), IOLAB_HUB_PORTS (the public port, the hub's
and the proxy's API: three free ports), IOLAB_HUB_PROXY (the configurable-http-proxy command),
IOLAB_HUB_TOKEN (the instructor's API token) and IOLAB_HUB_PASSWORD (the students' password).
"""

import asyncio
import os
import shlex
import sys
from pathlib import Path
from typing import Any

c = get_config()  # noqa: F821 (JupyterHub's config loader defines it)

ROOT = Path(os.environ["IOLAB_HUB_ROOT"])
PUBLIC_PORT, HUB_PORT, PROXY_API_PORT = (int(port) for port in os.environ["IOLAB_HUB_PORTS"].split(","))
# The chart's postStart command (book/instructors.md), with the home that SimpleLocalProcessSpawner gives.
POST_START = "test -d {work}/homework || {python} -m iolab homework student {work}/homework"

c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = PUBLIC_PORT
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = HUB_PORT
c.JupyterHub.db_url = f"sqlite:///{ROOT / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(ROOT / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.command = [os.environ["IOLAB_HUB_PROXY"]]
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{PROXY_API_PORT}"
# A server still running when the hub stops is stopped with it (the default, said so: the test relies on it).
c.JupyterHub.cleanup_servers = True

# The instructor: a service whose token may add users and start and reach their servers.
c.JupyterHub.services = [{"name": "instructor", "api_token": os.environ["IOLAB_HUB_TOKEN"]}]
c.JupyterHub.load_roles = [{
    "name": "instructor",
    "scopes": ["admin:users", "admin:servers", "access:servers", "list:users"],
    "services": ["instructor"],
}]
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = os.environ["IOLAB_HUB_PASSWORD"]
# Only the students the instructor added may log in, not whoever knows the password.
c.Authenticator.allow_all = False
c.Authenticator.allow_existing_users = True

c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = str(ROOT / "home" / "{username}")
c.Spawner.cmd = [str(Path(sys.executable).with_name("jupyterhub-singleuser"))]
c.Spawner.ip = "127.0.0.1"
# The image runs the server as its user "student"; a test run as root (CI) must say that root is meant.
if os.geteuid() == 0:
    c.Spawner.args = ["--ServerApp.allow_root=True"]
c.Spawner.environment = {"IOLAB_STUDENT": lambda spawner: spawner.user.name, "IOLAB_SCALE": "quick"}
# A busy two-core machine starts Python and Jupyter slowly: room for it, rather than a failed spawn.
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120


async def make_homework(spawner: Any) -> None:
    """The chart's postStart: the student edition in the student's work/homework, made once."""
    home = Path(spawner.home_dir)
    home.mkdir(parents=True, exist_ok=True)
    command = POST_START.format(work=shlex.quote(str(home / "work")), python=shlex.quote(sys.executable))
    process = await asyncio.create_subprocess_exec("sh", "-c", command, env=spawner.get_env(), cwd=home)
    if await process.wait() != 0:
        raise RuntimeError(f"postStart failed for {spawner.user.name} (exit {process.returncode}): {command}")


c.Spawner.pre_spawn_hook = make_homework
