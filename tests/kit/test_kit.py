import json
from datetime import datetime

import pandas as pd
import pytest

import iolab
from iolab.kit import machine, plots, results


def test_scale_defaults_to_full_and_rejects_unknown_values(monkeypatch):
    monkeypatch.delenv("IOLAB_SCALE", raising=False)
    assert iolab.scale().name == "full"
    monkeypatch.setenv("IOLAB_SCALE", "quick")
    assert iolab.scale().pick(1, 2) == 1
    monkeypatch.setenv("IOLAB_SCALE", "huge")
    with pytest.raises(ValueError, match="quick, full"):
        iolab.scale()


def test_fingerprint_names_the_machine():
    fp = machine.fingerprint()
    assert fp["cores"] >= 1 and fp["python"].count(".") == 2
    assert "cores" in machine.describe()


def test_save_and_reference_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("IOLAB_DATA", str(tmp_path))
    df = pd.DataFrame({"n": [1, 2], "ms": [0.5, 1.5]})
    monkeypatch.setenv("IOLAB_SCALE", "quick")
    results.save(df, "demo", folder="reference")
    written = json.loads((tmp_path / "reference" / "demo.json").read_text())
    assert written["scale"] == "quick" and written["cores"] == machine.cores()
    assert datetime.fromisoformat(written["measured_at"]).tzinfo is not None
    back = results.reference("demo")
    assert list(back.ms) == [0.5, 1.5]
    assert back.machine.iloc[0].startswith("reference: ")
    assert results.reference("absent") is None


def test_published_figures_are_read_by_source():
    julia = results.published("000").query("experiment == 'julia-processes'")
    assert set(julia.quantity) >= {"cores", "slowdown vs one request per core"}
    assert results.published("002").query("experiment == 'db-variants'").value.tolist()[0] == 52.47


def test_raising_the_open_files_limit_stops_at_the_hard_limit() -> None:
    import subprocess
    import sys

    code = (
        "import resource; from iolab.kit.machine import raise_open_files_limit as r\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))\n"
        "r(100); a = resource.getrlimit(resource.RLIMIT_NOFILE)[0]\n"
        "r(50); b = resource.getrlimit(resource.RLIMIT_NOFILE)[0]\n"
        "r(); c = resource.getrlimit(resource.RLIMIT_NOFILE)[0]\n"
        "print(a, b, c == hard)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["100", "100", "True"]  # raised to what is needed, never lowered, at most the hard limit


def test_sysctl_reads_the_numbers_of_a_kernel_setting() -> None:
    from iolab.kit import machine

    low, high = machine.sysctl("net.ipv4.ip_local_port_range")
    assert 0 < low < high <= 65535
    assert machine.sysctl("kernel.pid_max")[0] > 300


@pytest.mark.parametrize("value", [None, float("nan")])
def test_a_figure_an_optional_tool_did_not_measure_is_glued_as_words_not_nan(monkeypatch, value):
    glued = {}
    monkeypatch.setattr(plots, "glue", lambda name, text: glued.update({name: text}))
    plots.glue_optional("08-go-atomic-ns-1", value, "{:.1f} ns", "Go")
    assert glued == {"08-go-atomic-ns-1": "not measured here (install Go)"}


def test_a_measured_figure_is_glued_formatted_with_its_unit(monkeypatch):
    glued = {}
    monkeypatch.setattr(plots, "glue", lambda name, text: glued.update({name: text}))
    plots.glue_optional("11-kit-vs-wrk", 1.2345, "{:.2f} times", "wrk")
    plots.glue_optional("10-go-threads", 12, "{:,d} OS threads", "Go")
    assert glued == {"11-kit-vs-wrk": "1.23 times", "10-go-threads": "12 OS threads"}


def test_several_figures_of_one_run_are_glued_together_or_not_at_all(monkeypatch):
    glued = {}
    monkeypatch.setattr(plots, "glue", lambda name, text: glued.update({name: text}))
    plots.glue_optional("run", {"wall": 11.94, "threads": 6}, "{wall:.1f} s, {threads:d} OS threads", "Go")
    plots.glue_optional("half", {"wall": 11.94, "threads": float("nan")}, "{wall:.1f} s, {threads} OS threads", "Go")
    assert glued == {"run": "11.9 s, 6 OS threads", "half": "not measured here (install Go)"}



@pytest.mark.parametrize("variant, model", [("prefork --reuseport", "prefork"), ("asyncio --offload", "asyncio"),
                                            ("asyncio per core", "asyncio"), ("asyncio --offload", "asyncio per core")])
def test_a_servers_variant_is_told_apart_from_its_model_on_a_figure(variant, model):
    # Student trial 3 could not tell the older shades apart (an RGB distance near 0.2); these are over 0.35.
    distance = sum((a - b) ** 2 for a, b in zip(plots.PALETTE[variant], plots.PALETTE[model])) ** 0.5
    assert distance > 0.35
