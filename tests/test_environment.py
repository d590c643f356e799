"""The environment files agree: environment.yml (conda) names exactly the lock's packages."""

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def lock_pins(lock: Path = ROOT / "requirements.lock") -> dict[str, str]:
    """A uv lock's pins, ``{name: version}`` (names lower-cased)."""
    pins = {}
    for line in lock.read_text().splitlines():
        if line and not line.startswith((" ", "#")):
            name, _, version = line.partition("==")
            pins[name.strip().lower()] = version.split(";")[0].strip()  # an environment marker is no version
    return pins


def test_environment_yml_names_the_same_packages_as_the_lock():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    conda_pins = dict(p.split(";")[0].strip().lower().split("==") for p in pip_section)
    assert conda_pins == lock_pins()


def test_the_lock_pins_every_declared_dependency_and_not_the_asyncio_stub():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = project["dependencies"] + [d for extra in project["optional-dependencies"].values() for d in extra]
    names = {re.split(r"[<>=\[ ]", d)[0].lower() for d in declared}
    lock = lock_pins()
    assert "asyncio" not in names and "asyncio" not in lock
    assert names <= set(lock), names - set(lock)


def test_the_images_jupyterhub_lock_adds_packages_and_changes_none_of_the_courses():
    hub = lock_pins(ROOT / "container" / "hub.lock")
    course = lock_pins()
    assert "jupyterhub" in hub and "jupyterhub" not in course
    assert {name: v for name, v in hub.items() if name in course and course[name] != v} == {}


def test_binder_installs_the_lock_itself_and_the_kit_without_resolving_again():
    # binder/ is what repo2docker (mybinder.org) reads, and it hides the root's environment.yml from it.
    requirements = ROOT / "binder" / "requirements.txt"
    assert requirements.is_symlink() and requirements.resolve() == (ROOT / "requirements.lock").resolve(), \
        "a link to the lock, not a copy of it"
    python = re.search(r"--python-version (\d+\.\d+)", (ROOT / "requirements.lock").read_text())[1]
    assert (ROOT / "binder" / "runtime.txt").read_text().strip() == f"python-{python}"
    post_build = ROOT / "binder" / "postBuild"
    assert post_build.stat().st_mode & 0o111 and "--no-deps" in post_build.read_text()
    start = (ROOT / "binder" / "start").read_text()
    assert 'IOLAB_SCALE="${IOLAB_SCALE:-quick}"' in start and 'exec "$@"' in start


def test_repo2dockers_own_detection_builds_binder_with_the_lock_the_kit_and_jupyterlab(tmp_path):
    # Its dry run (--no-build) writes the Dockerfile without a container engine; mybinder.org's user is 1000.
    repo2docker = shutil.which("repo2docker")
    if repo2docker is None:
        pytest.skip("repo2docker is not installed (pip install jupyter-repo2docker, in a venv of its own)")
    done = subprocess.run([repo2docker, "--no-build", "--debug", "--user-id", "1000", "--user-name", "jovyan", str(ROOT)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    dockerfile = done.stdout + done.stderr
    python = (ROOT / "binder" / "runtime.txt").read_text().strip().removeprefix("python-")
    assert f"Building conda environment for python={python}" in dockerfile
    assert 'pip install --no-cache-dir -r "binder/requirements.txt"' in dockerfile
    assert "RUN ./binder/postBuild" in dockerfile and "environment.yml" not in dockerfile
    assert 'R2D_ENTRYPOINT="${REPO_DIR}/binder/start"' in dockerfile  # quick scale, before the server starts
    # The lock's JupyterLab replaces repo2docker's own in the same environment; the Binder button opens lab/tree/...
    assert "jupyterlab" in lock_pins()
