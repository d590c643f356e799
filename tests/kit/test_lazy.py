"""Lazy re-exports: a package's names import their module on first use, and only then."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_a_program_importing_the_sleepers_package_does_not_import_the_runner_or_pandas():
    code = "import sys, iolab.topics.c10k.protocol; print('pandas' in sys.modules, 'iolab.topics.c10k.runner' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_a_re_exported_name_is_the_module_s_own_and_an_unknown_name_is_refused():
    import iolab.topics.c10k
    import iolab.topics.upstreams
    from iolab.topics.c10k.runner import run
    from iolab.topics.upstreams.spec import parse_spec

    assert iolab.topics.c10k.run is run and iolab.topics.upstreams.parse_spec is parse_spec
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        iolab.topics.c10k.nothing  # noqa: B018
