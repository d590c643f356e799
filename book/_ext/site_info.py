"""What every page of a built book says about itself, and where its buttons lead.

- A banner at the top of every page (the theme's ``announcement``): the machine, scale and date its
  figures were measured on, and the commit the book was built from (the PDF prints it on its title
  page). A reader of the published site sees whose numbers they are reading; a student's own build
  names the student's machine.
- ``IOLAB_REPOSITORY`` (an https URL of the course's repository, which `make site` takes from the
  ``origin`` remote or from ``REPOSITORY=``) turns on the repository and issues buttons; without it
  they stay off rather than point at a default. ``IOLAB_BRANCH`` names the branch (``main``).
"""

from __future__ import annotations

import datetime
import html
import os
import subprocess

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


def setup(app):
    app.connect("config-inited", _configure)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
