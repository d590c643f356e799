"""The publishing workflow (.github/workflows/publish.yml) is valid GitHub Actions: actionlint says so.

It cannot run here (no GitHub); actionlint checks its syntax, expressions, job graph, action inputs and,
with shellcheck when installed, its shell steps. `make unit` builds actionlint when Go is installed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "publish.yml"
ACTIONLINT = Path(sys.executable).parent / "actionlint"


def run_actionlint(path: Path) -> subprocess.CompletedProcess:
    binary = ACTIONLINT if ACTIONLINT.is_file() else shutil.which("actionlint")
    if binary is None:
        pytest.skip("actionlint is not built (it needs Go: `make unit` builds it when `go` is installed)")
    return subprocess.run([str(binary), "-no-color", str(path)], capture_output=True, text=True, timeout=120)


def test_the_publishing_workflow_passes_actionlint() -> None:
    done = run_actionlint(WORKFLOW)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_would_catch_a_broken_workflow(tmp_path: Path) -> None:
    text = WORKFLOW.read_text()
    assert text.count("needs: site\n") == 1
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    (folder / "publish.yml").write_text(text.replace("needs: site\n", "needs: no-such-job\n"))
    done = run_actionlint(folder / "publish.yml")
    assert done.returncode != 0 and "no-such-job" in done.stdout


def test_the_workflow_publishes_what_make_site_writes_and_tests_inside_the_image() -> None:
    text = WORKFLOW.read_text()
    jobs = yaml.safe_load(text)["jobs"]
    assert jobs["site"]["needs"] == "test-in-image" and jobs["deploy"]["needs"] == "site"
    assert "make image" in text and "make test" in text and "make site" in text
    upload = next(s for s in jobs["site"]["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert upload["with"]["path"] == "_build/site"


@pytest.mark.parametrize("target", ["test", "unit"])
def test_make_builds_actionlint_before_the_tests_that_use_it(target: str, tmp_path: Path) -> None:
    # With BIN pointing at an empty folder, actionlint is missing: `make -n` lists the rule that builds it,
    # unless the target's prerequisites were read before ACTIONLINT was defined (then it is empty).
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    done = subprocess.run(["make", "-n", "--no-print-directory", target, f"BIN={tmp_path}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert f"GOBIN={tmp_path} go install github.com/rhysd/actionlint" in done.stdout, done.stdout + done.stderr
