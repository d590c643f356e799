"""What every page of a built book says about itself, and where its buttons lead.

- A banner at the top of every page (the theme's ``announcement``): the machine, scale and date its
  figures were measured on, and the commit the book was built from (the PDF prints it on its title
  page). A reader of the published site sees whose numbers they are reading; a student's own build
  names the student's machine.
- ``IOLAB_REPOSITORY`` (an https URL of the course's repository, which `make site` takes from the
  ``origin`` remote or from ``REPOSITORY=``) turns on the repository and issues buttons; without it
  they stay off rather than point at a default. ``IOLAB_BRANCH`` names the branch (``main``).
- ``IOLAB_HUB`` (the https URL of a class's JupyterHub, `make site HUB=...`) adds a launch button to every
  notebook page. The readers' edition launches the course's own notebook through nbgitpuller (the hub
  pulls the repository into the reader's home); the student edition launches the student's own copy of
  the notebook, in the homework folder the hub's image writes for each student (``IOLAB_HUB_FOLDER``,
  ``work/homework`` as in the instructors' page's hub configuration), so a student never opens the
  instructor edition from their book.
- ``IOLAB_BINDER`` (a BinderHub's https URL; `make site` gives https://mybinder.org unless ``BINDER=`` names
  another, and ``BINDER=none`` leaves it out) adds a Binder button to every notebook page of the readers'
  edition, when the repository is public on GitHub: repo2docker builds the course from ``binder/`` and
  JupyterLab opens the notebook. The student edition has none: its notebooks are not in the repository.
"""

from __future__ import annotations

import datetime
import html
import os
import subprocess
from pathlib import Path

from execution_key import scale
from iolab.kit import machine


def commit(root: str) -> str | None:
    """The short hash of the commit the book is built from (``+`` if the tree has changes), or None."""
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+" if dirty else "")


def banner(root: str) -> str:
    """One line: where and at what scale this book's figures were measured."""
    built = commit(root)
    return (f"Figures measured on {machine.describe()} at IOLAB_SCALE={scale()}, "
            f"{datetime.date.today().isoformat()}" + (f", from commit {built}" if built else "") + ".")


def _configure(app, config) -> None:
    line = banner(str(app.srcdir))
    options = config.html_theme_options
    options["announcement"] = html.escape(line)
    config.today = line.replace("_", r"\_")  # the PDF's title page prints it as its date (LaTeX, hence the escape)
    repository = os.environ.get("IOLAB_REPOSITORY", "").strip().rstrip("/")
    if repository:
        if not repository.startswith("https://"):
            raise ValueError(f"IOLAB_REPOSITORY={repository!r}: give the repository's https URL")
        options.update(repository_url=repository, repository_branch=os.environ.get("IOLAB_BRANCH", "main"),
                       path_to_docs="", use_repository_button=True, use_issues_button=True)
    else:
        options.update(use_repository_button=False, use_issues_button=False)
    if os.environ.get("IOLAB_EDITION") != "student":
        options["launch_buttons"] = {**options.get("launch_buttons", {}), **launch_buttons(repository)}


def launch_buttons(repository: str) -> dict[str, str]:
    """The readers' edition's launch buttons (the theme's ``launch_buttons``): the class's hub, Binder."""
    buttons: dict[str, str] = {}
    if hub := hub_url():
        if not repository:
            raise ValueError("IOLAB_HUB needs IOLAB_REPOSITORY: the hub's launch button pulls the repository (nbgitpuller)")
        buttons["jupyterhub_url"] = hub
    # Binder builds what it clones: only a public GitHub repository (binder/ in it) has a Binder button.
    if (binder := binder_url()) and repository.startswith("https://github.com/"):
        buttons["binderhub_url"] = binder
    return {**buttons, "notebook_interface": "jupyterlab"} if buttons else {}


def hub_url() -> str | None:
    """The class's JupyterHub (``IOLAB_HUB``), without a trailing slash; None without one."""
    hub = os.environ.get("IOLAB_HUB", "").strip().rstrip("/")
    if hub and not hub.startswith("https://"):
        raise ValueError(f"IOLAB_HUB={hub!r}: give the hub's https URL")
    return hub or None


def binder_url() -> str | None:
    """The BinderHub of the Binder button (``IOLAB_BINDER``), without a trailing slash; None without one or for ``none``."""
    binder = os.environ.get("IOLAB_BINDER", "").strip().rstrip("/")
    if binder.lower() in ("", "none"):
        return None
    if not binder.startswith("https://"):
        raise ValueError(f"IOLAB_BINDER={binder!r}: give the BinderHub's https URL, or none")
    return binder


def student_launch(hub: str, pagename: str) -> str:
    """Where a student edition's notebook page launches: the student's own copy, in their homework folder on the hub."""
    folder = os.environ.get("IOLAB_HUB_FOLDER", "work/homework").strip("/")
    return f"{hub}/hub/user-redirect/lab/tree/{folder}/{pagename.rsplit('/', 1)[-1]}.ipynb"


def _student_launch_button(app, pagename, templatename, context, doctree) -> None:
    hub = hub_url()
    if not hub or os.environ.get("IOLAB_EDITION") != "student" or "header_buttons" not in context:
        return
    if not (Path(app.srcdir) / f"{pagename}.ipynb").exists():
        return
    context["header_buttons"].append({"type": "link", "text": "JupyterHub", "label": "launch-student-notebook",
                                      "tooltip": "Open your copy on the class's JupyterHub",
                                      "icon": "_static/images/logo_jupyterhub.svg",
                                      "url": student_launch(hub, pagename)})


def setup(app):
    app.connect("config-inited", _configure)
    app.connect("html-page-context", _student_launch_button, priority=600)  # after the theme makes its buttons
    return {"parallel_read_safe": True, "parallel_write_safe": True}
