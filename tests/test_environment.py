"""The environment files agree: environment.yml (conda) names exactly the lock's packages."""

import re
import tomllib
from pathlib import Path

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
