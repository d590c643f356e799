"""container/engine.sh gives `build` and `run` only the options that verb takes.

Every option engine.sh prints for a verb is looked up in that verb's own help: the installed engine's
`podman|docker build|run --help` where there is one, and otherwise the help texts recorded in
container_help.txt beside this file, a section each:

- [podman-4.3.1-build], [podman-4.3.1-run], [podman-4.3.1-global]: containers/podman at tag v4.3.1
  (Debian 12's podman), docs/source/markdown/podman-build.1.md.in, podman-run.1.md.in and podman.1.md
  (the global options, which cmd/podman/root.go makes persistent: every verb takes them, though its
  --help leaves them out; `--runtime` is one, which `podman run` takes only so).
- [docker-28.2.2-run]: the docker 28.2.2 client's own `docker run --help` (build e6534b4).
- [docker-buildx-0.24.0-build]: docker/buildx at tag v0.24.0, docs/reference/buildx_build.md (the
  generated options table). `docker build` is `docker buildx build` wherever the buildx plugin is
  installed; without it docker's legacy builder has no --secret, and engine.sh refuses to go on.

engine.sh runs here without an engine: ENGINE names one, and a fake `podman` (saying cgroups v1), `runc`
and `docker` on PATH answer what it asks them, so that it prints every option it can.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENGINE_SH = ROOT / "container" / "engine.sh"
RECORDINGS = Path(__file__).parent / "container_help.txt"

RECORDED = {
    ("podman", "build"): ["podman-4.3.1-build", "podman-4.3.1-global"],
    ("podman", "run"): ["podman-4.3.1-run", "podman-4.3.1-global"],
    ("docker", "build"): ["docker-buildx-0.24.0-build"],
    ("docker", "run"): ["docker-28.2.2-run"],
}
VERBS = sorted(RECORDED)

FAKES = {
    "podman": 'case "$1" in info) echo v1 ;; *) exit 3 ;; esac\n',
    "runc": "exit 0\n",
    "docker": '[ "$1 $2" = "buildx version" ] || exit 3\n',
}


def recordings() -> dict[str, set[str]]:
    """container_help.txt's sections: each one's options by the section's name."""
    sections: dict[str, set[str]] = {}
    for line in RECORDINGS.read_text().splitlines():
        if line.startswith("["):
            options = sections.setdefault(line.strip("[]"), set())
        elif line.startswith("--"):
            options.add(line.strip())
    return sections


def recorded(engine: str, verb: str) -> set[str]:
    """The options the recorded help texts list for `engine verb`."""
    sections = recordings()
    return set().union(*(sections[name] for name in RECORDED[engine, verb]))


def help_options(text: str) -> set[str]:
    """The long options a cobra `--help` text lists, one an indented line ("  -f, --file string ...")."""
    return set(re.findall(r"^ +(?:-\w, )?(--[a-z0-9-]+)", text, re.MULTILINE))


def installed(engine: str, verb: str) -> set[str]:
    """The options the installed engine's own help lists for `engine verb` (podman's global ones too)."""
    texts = [subprocess.run([engine, verb, "--help"], capture_output=True, text=True, timeout=30).stdout]
    if engine == "podman":
        texts.append(subprocess.run([engine, "--help"], capture_output=True, text=True, timeout=30).stdout)
    return help_options("\n".join(texts))


def fake_bin(tmp_path: Path, **scripts: str) -> Path:
    """A folder of small shell scripts standing in for the engine's commands."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for name, body in scripts.items():
        (folder / name).write_text("#!/bin/sh\n" + body)
        (folder / name).chmod(0o755)
    return folder


def run_engine_sh(script: Path, engine: str, verb: str, tmp_path: Path, path: str,
                  **extra: str) -> subprocess.CompletedProcess:
    """engine.sh's `verb-options` for `engine`, with a CA bundle to pass, PATH as given and `extra` variables."""
    bundle = tmp_path / "ca.crt"
    bundle.write_text("a certificate\n")
    env = {k: v for k, v in os.environ.items() if k not in {"CONTAINER_RUNTIME", "PIDS_LIMIT", "NOFILE", "NPROC"}}
    env.update(ENGINE=engine, CA_BUNDLE=str(bundle), PATH=path, **extra)
    return subprocess.run(["bash", str(script), f"{verb}-options"], capture_output=True, text=True, env=env, timeout=30)


def printed(script: Path, engine: str, verb: str, tmp_path: Path, path: str | None = None, **extra: str) -> list[str]:
    """The options engine.sh prints for `engine verb`, by name; with the fake engine unless a PATH is given."""
    path = path or f"{fake_bin(tmp_path, **FAKES)}{os.pathsep}{os.environ['PATH']}"
    done = run_engine_sh(script, engine, verb, tmp_path, path, **extra)
    assert done.returncode == 0, done.stderr
    return [word for word in done.stdout.split() if word.startswith("--")]


@pytest.mark.parametrize("engine,verb", VERBS, ids=[f"{e}-{v}" for e, v in VERBS])
def test_engine_sh_prints_for_each_verb_only_options_its_recorded_help_lists(engine, verb, tmp_path):
    options = printed(ENGINE_SH, engine, verb, tmp_path)
    expected = {
        ("podman", "build"): {"--runtime", "--ulimit", "--network", "--secret"},
        ("podman", "run"): {"--runtime", "--ulimit", "--pids-limit"},
        ("docker", "build"): {"--network", "--secret"},
        ("docker", "run"): set(),
    }[engine, verb]
    assert set(options) - recorded(engine, verb) == set(), f"`{engine} {verb}` has no such option"
    assert set(options) == expected, "the fakes should make engine.sh print every option it has"


@pytest.mark.parametrize("engine,verb", VERBS, ids=[f"{e}-{v}" for e, v in VERBS])
def test_engine_sh_prints_for_each_verb_only_options_the_installed_engines_help_lists(engine, verb, tmp_path):
    if shutil.which(engine) is None:
        pytest.skip(f"no {engine} here: the recorded help texts stand in for it")
    path = os.environ["PATH"]
    # A runtime named, so that --runtime is printed and checked whatever this host's cgroups are.
    extra = {"CONTAINER_RUNTIME": "runc"} if engine == "podman" else {}
    if engine == "docker" and verb == "build":
        has_buildx = subprocess.run(["docker", "buildx", "version"], capture_output=True, timeout=30).returncode == 0
        if not has_buildx:
            done = run_engine_sh(ENGINE_SH, engine, verb, tmp_path, path)
            assert done.returncode == 2 and "buildx" in done.stderr, (done.stdout, done.stderr)
            return
    help_lists = installed(engine, verb)
    assert "--help" in help_lists, f"no options read from `{engine} {verb} --help`"
    options = set(printed(ENGINE_SH, engine, verb, tmp_path, path, **extra))
    assert options - help_lists == set(), f"the installed `{engine} {verb}` has no such option"


def test_docker_without_buildx_is_refused_with_the_fix_named(tmp_path):
    no_buildx = fake_bin(tmp_path, docker="exit 1\n")
    path = f"{no_buildx}{os.pathsep}{os.environ['PATH']}"
    done = run_engine_sh(ENGINE_SH, "docker", "build", tmp_path, path)
    assert done.returncode == 2
    assert "install docker's buildx plugin" in done.stderr
    assert done.stdout == ""


def test_a_run_only_flag_planted_in_build_options_is_caught(tmp_path):
    # The bug of issue 41: --pids-limit, which `podman build` refuses, in what `make image` passes it.
    text = ENGINE_SH.read_text()
    planted_line = 'options="$options --network host$secret"'
    assert text.count(planted_line) == 1, "engine.sh's build-options line changed: update the planted case"
    planted = tmp_path / "engine.sh"
    planted.write_text(text.replace(planted_line, 'options="$options$run_only --network host$secret"'))
    options = set(printed(planted, "podman", "build", tmp_path))
    assert options - recorded("podman", "build") == {"--pids-limit"}
    assert "--pids-limit" in recorded("podman", "run")
