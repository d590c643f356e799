"""Chapter 12's experiments: Little's law, link settings, TLS phases, timeouts against bad clients, the link's RTT."""

from __future__ import annotations

import statistics

import psutil
import pytest

from iolab.netlab import available
from iolab.servers import open_server
from iolab.topics.networks import attacks, distance, link, tls

needs_lab = pytest.mark.skipif(available() is not None, reason=available() or "")


def test_little_bound_is_clients_over_the_time_per_request() -> None:
    assert distance.little_rps(10, 50) == pytest.approx(200)
    assert distance.little_rps(10, 50, round_trips=2) == pytest.approx(100)
    assert distance.little_rps(4, 10, service_ms=10) == pytest.approx(200)


def test_a_link_setting_resets_what_it_does_not_name() -> None:
    assert distance.link_settings({"rtt_ms": 50}) == {"delay_ms": 25, "jitter_ms": 0.0, "loss": 0.0}
    assert distance.link_settings({"loss": 0.01}) == {"delay_ms": 0.0, "jitter_ms": 0.0, "loss": 0.01}


def test_prefork_is_pinned_to_the_chapters_children_and_other_models_keep_their_defaults() -> None:
    # The chapter's "N / RTT" and "never served" counts assume this many children on every machine.
    assert distance.server_settings("prefork") == {"model": "prefork", "workers": distance.PREFORK_CHILDREN}
    assert distance.server_settings("asyncio") == {"model": "asyncio"}


@pytest.mark.solo
def test_a_prefork_server_started_with_the_chapters_settings_has_that_many_children() -> None:
    with open_server(**distance.server_settings("prefork")) as server:
        assert len(psutil.Process(server.pid).children()) == distance.PREFORK_CHILDREN


def test_tls_requests_answer_and_only_tls_has_a_handshake() -> None:
    phases = tls.request_phases(tls.KINDS, samples=3)
    assert sorted(phases.kind.unique()) == sorted(tls.KINDS) and len(phases) == 9
    handshake = phases.groupby("kind").handshake_ms.min()
    assert handshake["plain"] < 0.05 < handshake["TLS 1.3"]
    assert (phases.total_ms >= phases.connect_ms + phases.request_ms).all()


def test_tls_contexts_are_pinned_to_their_version() -> None:
    ctx = tls.contexts("TLS 1.2")
    assert ctx.client.maximum_version == ctx.server.minimum_version == tls.ssl.TLSVersion.TLSv1_2


@pytest.mark.solo
def test_a_handshake_costs_more_cpu_than_a_plain_request() -> None:
    cpu = tls.handshake_cpu(["plain", "TLS 1.3"], samples=30).set_index("kind").cpu_ms_per_request
    assert cpu["TLS 1.3"] > 2 * cpu["plain"]


@pytest.mark.solo
def test_idle_clients_stop_prefork_until_a_keepalive_timeout_frees_a_child() -> None:
    stopped = attacks.idle_holders(workers=2, keepalive_timeout=None, wait_s=1.5)
    assert stopped["answered_after_s"] is None and stopped["idle_closed_by_server"] == 0
    freed = attacks.idle_holders(workers=2, keepalive_timeout=0.5, wait_s=3.0)
    assert 0.4 < freed["answered_after_s"] < 0.5 + 0.3 and freed["idle_closed_by_server"] >= 1


@pytest.mark.solo
def test_a_header_timeout_shorter_than_a_slow_head_refuses_it_and_a_longer_one_does_not() -> None:
    table = attacks.slow_but_honest([0.5, 3.0], head_takes_s=1.0, clients=3).set_index("header_timeout_s")
    assert table.loc[0.5, "refused_408"] == 3 and table.loc[0.5, "answered_200"] == 0
    assert table.loc[3.0, "answered_200"] == 3 and table.loc[3.0, "refused_408"] == 0


@pytest.mark.solo
def test_slowloris_stops_prefork_but_not_asyncio() -> None:
    table = attacks.slowloris_table(["prefork", "asyncio"], attackers=100, header_timeout=None, duration_s=1.0)
    attacked = table[table.phase == "under attack"].set_index("model")
    assert attacked.loc["prefork", "children"] == distance.PREFORK_CHILDREN
    assert attacked.loc["prefork", "requests"] == 0 and attacked.loc["prefork", "never_served"] == 2
    assert attacked.loc["asyncio", "requests"] > 100 and attacked.loc["asyncio", "never_served"] == 0


@needs_lab
@pytest.mark.solo
def test_the_measured_round_trip_is_within_5_percent_of_the_setting() -> None:
    def measure(lab):
        # The forwarder is a user-space process: what it adds itself (some 0.1-0.5 ms, more on a
        # busy machine) is measured in the same run, on a link set to no delay, and taken off.
        lab.set(delay_ms=0.0, jitter_ms=0.0, loss=0.0)
        baseline_ms = statistics.median(link.connect_times_ms(lab, 9))
        return baseline_ms, link.rtt_accuracy(lab, [10, 50], samples=5)

    baseline_ms, table = link.in_lab(measure)
    added_by_link = table.measured_rtt_ms - baseline_ms
    assert ((added_by_link - table.configured_rtt_ms).abs() < 0.05 * table.configured_rtt_ms).all(), (baseline_ms, table)


@needs_lab
@pytest.mark.solo
def test_keepalive_requests_across_the_link_follow_little() -> None:
    loads = [{"connections": 4, "duration_s": 1.0, "keepalive": keepalive} for keepalive in (True, False)]
    table = link.in_lab(lambda lab: distance.across_links(lab, [{"model": "asyncio"}], [{"rtt_ms": 40}], loads,
                                                          progress=False)).set_index("keepalive")
    for keepalive, trips in ((True, 1), (False, 2)):
        assert 0.7 < table.loc[keepalive, "rps"] / distance.little_rps(4, 40, trips) < 1.05, table
