"""Lazy re-exports: a package's names import their module on first use, and only then."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_a_program_importing_the_sleepers_package_does_not_import_the_runner_or_pandas():
    code = "import sys, iolab.sleepers.protocol; print('pandas' in sys.modules, 'iolab.sleepers.runner' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_a_re_exported_name_is_the_module_s_own_and_an_unknown_name_is_refused():
    import iolab.sleepers
    import iolab.upstreams
    from iolab.sleepers.runner import run
    from iolab.upstreams.spec import parse_spec

    assert iolab.sleepers.run is run and iolab.upstreams.parse_spec is parse_spec
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        iolab.sleepers.nothing  # noqa: B018
