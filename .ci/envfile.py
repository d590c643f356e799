"""Write environment.yml (for conda users) from requirements.lock, so the two name the same packages.

Usage: python .ci/envfile.py requirements.lock > environment.yml

Everything is installed by pip inside the conda environment, at the lock's exact versions: conda
channels package some of these libraries under other names or versions, and a course whose figures
depend on library versions should have one set of them.
"""

import re
import sys

HEADER = """\
# Generated from requirements.lock by `make lock` (.ci/envfile.py): do not edit by hand.
# For conda users: conda env create -f environment.yml && conda activate iolab && pip install -e .
name: iolab
channels:
  - conda-forge
dependencies:
  - python=3.11
  - pip
  - pip:
"""


def pins(lock_text: str) -> list[str]:
    """The ``name==version`` lines of a pip lock (with their environment marker), comments and hashes dropped."""
    return [m.group(0).strip() for line in lock_text.splitlines()
            if (m := re.match(r"^[A-Za-z0-9_.-]+==[^\s;]+(?:\s*;[^#]*)?", line))]


if __name__ == "__main__":
    lines = pins(open(sys.argv[1]).read())
    sys.stdout.write(HEADER + "".join(f"      - {pin}\n" for pin in lines))
