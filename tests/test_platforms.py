"""The lock installs where the course's image is built: Linux on x86-64, and Linux on arm64, which is
what Docker and podman run on an Apple Silicon Mac.

uv resolves the lock for each platform without installing anything (``--dry-run``), from wheels only:
a package without a wheel there must be built from its source, which only the image is ready for (it
has a C compiler and Python's headers). Those packages are listed here, and the test fails when one
gains a wheel (the list can shrink) or another loses one (the image's build would need it).
Needs the package index; without it the tests skip with a note.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from test_environment import lock_pins

ROOT = Path(__file__).resolve().parents[1]
UV = Path(sys.executable).parent / "uv"
PLATFORMS = {"x86_64-manylinux_2_28": "Linux on Intel or AMD", "aarch64-manylinux_2_28": "Linux on ARM, Apple Silicon's containers"}
# Package -> platforms on which it has no wheel (it is built from its sdist there).
SOURCE_BUILT = {"hdrhistogram": {"aarch64-manylinux_2_28"}}
# Package -> the only platforms it is installed on: its lock line carries an environment marker, and
# elsewhere the course works without it (chapter 13's io_uring binding: x86-64 wheels only, no source).
PLATFORM_ONLY = {"liburing": {"x86_64-manylinux_2_28"}}
# How uv says it could not reach the index (or could not trust it: a TLS-inspecting proxy whose root
# certificate this machine lacks, as in a container built without the host's bundle).
OFFLINE = ("Failed to fetch", "dns error", "Could not connect", "error sending request", "timed out",
           "certificate", "UnknownIssuer", "Network is unreachable", "Connection refused")


def pins() -> dict[str, str]:
    """The lock's ``name==version`` requirements, by name."""
    return {name: f"{name}=={version}" for name, version in lock_pins().items()}


def dry_run(requirements: list[str], platform: str, tmp_path: Path, wheels_only: bool) -> subprocess.CompletedProcess:
    """``uv pip install --dry-run`` of exactly these pins for ``platform`` and Python 3.11."""
    lock = tmp_path / f"{platform}-{wheels_only}.txt"
    lock.write_text("\n".join(requirements) + "\n")
    args = [str(UV), "pip", "install", "--dry-run", "--no-deps", "--python-platform", platform, "--python-version", "3.11",
            "--target", str(tmp_path / "target"), "-r", str(lock)] + (["--only-binary", ":all:"] if wheels_only else [])
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if done.returncode and any(sign in done.stderr for sign in OFFLINE):
        pytest.skip(f"the package index is not reachable: {done.stderr.strip().splitlines()[-1]}")
    return done


@pytest.mark.parametrize("platform", PLATFORMS)
def test_every_locked_package_but_the_listed_ones_has_a_wheel_for(platform: str, tmp_path: Path) -> None:
    wheels = [pin for name, pin in pins().items()
              if platform not in SOURCE_BUILT.get(name, ()) and platform in PLATFORM_ONLY.get(name, {platform})]
    done = dry_run(wheels, platform, tmp_path, wheels_only=True)
    assert done.returncode == 0, f"{PLATFORMS[platform]}: a locked package has no wheel:\n{done.stderr[-2000:]}"
    assert f"Would install {len(wheels)} packages" in done.stderr, done.stderr[-500:]


@pytest.mark.parametrize("name", SOURCE_BUILT)
def test_a_package_listed_as_built_from_source_has_no_wheel_but_a_source(name: str, tmp_path: Path) -> None:
    pin = pins()[name]
    for platform in SOURCE_BUILT[name]:
        assert dry_run([pin], platform, tmp_path, wheels_only=True).returncode != 0, f"{pin} now has a wheel for {platform}"
        done = dry_run([pin], platform, tmp_path, wheels_only=False)
        assert done.returncode == 0, done.stderr[-2000:]


def test_the_image_can_build_from_source() -> None:
    containerfile = (ROOT / "Containerfile").read_text()
    assert "build-essential" in containerfile and "python3-dev" in containerfile


@pytest.mark.parametrize("name", PLATFORM_ONLY)
def test_a_package_for_some_platforms_only_is_locked_with_its_marker(name: str) -> None:
    [line] = [line for line in (ROOT / "requirements.lock").read_text().splitlines() if line.startswith(f"{name}==")]
    assert 'platform_machine == "x86_64"' in line and 'sys_platform == "linux"' in line, line
