"""Incremental builds that stay correct: executed notebooks are cached under a key of everything they run with.

myst-nb's cache (jupyter-cache) matches a notebook by its code cells only. A figure also depends on
the lab kit the notebook imports, the data it overlays, the locked environment, the scale and the
student id, none of which are in the notebook. So the cache lives in a folder named after a hash of
those (``_build/.jupyter_cache/<scale>-<key>``): change any of them and every notebook runs again
(the safe answer, not the finest one); change only prose and nothing runs; change one notebook and
only it runs. Sphinx's own incremental build is told the same: when the key changes, every page is
re-read, and when a notebook is re-read, so are the prose pages that glue its figures.

One more rule keeps ``--warningiserror`` honest: Sphinx reports a page's warnings only when it reads
or writes that page, so a rebuild after a failed build, with nothing changed, would pass. After a
build with warnings, the next one reads every page again (the notebooks from the cache).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from iolab.kit import paths, platforms, student
from iolab.kit import scale as scales

# What a notebook's outputs depend on besides its own code, relative to the book's root.
INPUTS = ("src/iolab", "data/reference", "data/published.csv", "data/static", "data/wordfreq", "requirements.lock")
# IOLAB_DATA moves every file the kit reads from data/ (kit.paths), so it keys the cache too; a faked
# platform (kit.platforms) skips cells, so a book built with one must not be served to a build without.
ENVIRONMENT = (scales.ENV, student.ENV, "IOLAB_DATABASE_URL", paths.DATA_ENV, platforms.FAKE_ENV)


def files(root: Path, inputs: Iterable[str] = INPUTS) -> list[Path]:
    """Every file under ``inputs`` (sources, not caches), sorted."""
    found = []
    for name in inputs:
        path = root / name
        candidates = [path] if path.is_file() else path.rglob("*") if path.is_dir() else []
        found += [p for p in candidates if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith(".pyc")]
    return sorted(found)


def scale() -> str:
    """The name of the scale the notebooks will run at (kit.scale's, so a misspelt one fails the build)."""
    return scales.scale().name


def key(root: Path, environ: dict[str, str] | None = None) -> str:
    """A short hash of the inputs' paths and bytes and of the environment variables the notebooks read."""
    environ = dict(os.environ) if environ is None else environ
    digest = hashlib.sha256()
    for path in files(root):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    for name in ENVIRONMENT:
        digest.update(f"{name}={environ.get(name, '')}\0".encode())
    return digest.hexdigest()[:12]


def cache_folder(build_dir: Path, root: Path) -> Path:
    """``<build_dir>/.jupyter_cache/<scale>-<key>``; older folders of the same scale are removed."""
    folder = build_dir / ".jupyter_cache" / f"{scale()}-{key(root)}"
    if folder.parent.is_dir():
        for old in folder.parent.glob(f"{scale()}-*"):
            if old != folder:
                shutil.rmtree(old, ignore_errors=True)
    return folder


def _set_cache(app, config) -> None:
    root = Path(app.srcdir)
    config.nb_execution_cache_path = str(cache_folder(Path(app.outdir).parent, root))
    app.iolab_execution_key = Path(config.nb_execution_cache_path).name


WARNED = ".iolab-warned"  # in the doctree folder: the last build had warnings (or failed)


def _outdated(app, env, added, changed, removed) -> list[str]:
    """Pages to read again besides those Sphinx found changed: all after a key change or a build with
    warnings; the prose pages after a notebook."""
    notebooks = {doc for doc in env.found_docs if doc.startswith("notebooks/")}
    warned = Path(app.doctreedir) / WARNED
    if warned.exists():
        warned.unlink()
        return sorted(env.found_docs)
    if getattr(env, "iolab_execution_key", None) != app.iolab_execution_key:
        env.iolab_execution_key = app.iolab_execution_key
        return sorted(env.found_docs)
    if (added | changed) & notebooks:
        return sorted(env.found_docs - notebooks)  # they glue the notebooks' figures
    return []


def _finished(app, exception) -> None:
    """Remember a build that failed or warned, so that the next one reports its warnings again."""
    if exception is not None or getattr(app, "_warncount", 0):
        Path(app.doctreedir).mkdir(parents=True, exist_ok=True)
        (Path(app.doctreedir) / WARNED).touch()


def setup(app):
    app.connect("config-inited", _set_cache)
    app.connect("env-get-outdated", _outdated)
    app.connect("build-finished", _finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
