"""Invariants of every run: conservation, monotonic time, no leaked packets, determinism; in
one part and in a run in parts (issue 20: `partition="leaves"`, 20 parts in windows)."""
import numpy as np
import pytest

from rocesim import Simulation, topology, traffic


PARTS = pytest.mark.parametrize("part", ["none", "leaves"], ids=["one_part", "leaves"])


def fat_tree_run(seed, pfc=True, buffer="32MB", load=0.6, part="none"):
    t = topology.fat_tree(4, "100Gbps", "1us")
    sim = Simulation(t, seed=seed, switch={"buffer": buffer, "pfc": {"enabled": pfc}},
                     nic={"rto": "200us"}, partition=part)
    rng = np.random.default_rng(seed)
    sim.add_flows(traffic.poisson_cdf(t.n_hosts, 100e9, load, 200 * 10**6, traffic.WEBSEARCH, rng))
    sim.add_flows(traffic.incast(list(range(1, 13)), 0, 200_000, 50 * 10**6))
    return sim.run()


@pytest.fixture(scope="module", params=["none", "leaves"], ids=["one_part", "leaves"])
def part(request):
    return request.param


@pytest.fixture(scope="module")
def busy(part):
    return fat_tree_run(seed=7, part=part)


def test_bytes_delivered_equal_bytes_sent(busy):
    f, s = busy.flows, busy.summary
    assert s["flows_completed"] == s["flows_total"]
    assert (f["delivered_bytes"] == f["size_bytes"]).all()
    assert s["data_bytes_delivered"] == f["size_bytes"].sum()


def test_every_packet_sent_crossed_its_link(busy):
    assert busy.ports["tx_packets"].sum() == busy.summary["link_crossings"]


def test_time_never_goes_backwards(busy):
    assert busy.summary["time_errors"] == 0
    f = busy.flows
    assert (f["fct_ns"] > 0).all()
    assert (f["rx_fct_ns"] <= f["fct_ns"]).all()            # the ACK comes after the data
    assert (f["fct_ns"] >= f["ideal_fct_ns"] - 1e-6).all()  # nothing beats an idle network


def test_no_packet_leaks(busy):
    assert busy.summary["packets_in_use_at_end"] == 0
    assert busy.summary["packets_peak"] > 0


def test_lossless_run_drops_nothing(busy):
    assert busy.summary["drops"] == 0
    assert busy.summary["retx_bytes"] == 0


def test_same_seed_same_output(busy, part):
    again = fat_tree_run(seed=7, part=part)
    for k in ("fct_ns", "rx_fct_ns", "ideal_fct_ns", "start_ns", "size_bytes", "dst"):
        np.testing.assert_array_equal(busy.flows[k], again.flows[k])
    for k in ("tx_bytes", "tx_packets", "pauses_sent", "ecn_marks"):
        np.testing.assert_array_equal(busy.ports[k], again.ports[k])
    for k in ("events", "link_crossings", "pfc_pauses"):
        assert busy.summary[k] == again.summary[k]


def test_different_seed_different_output(busy, part):
    other = fat_tree_run(seed=8, part=part)
    assert not np.array_equal(busy.ports["tx_bytes"], other.ports["tx_bytes"])


@PARTS
def test_lossy_run_conserves_bytes_and_packets(part):
    res = fat_tree_run(seed=3, pfc=False, buffer="300KB", load=0.8, part=part)
    s, f = res.summary, res.flows
    assert s["drops"] > 0
    assert s["flows_completed"] == s["flows_total"]
    assert (f["delivered_bytes"] == f["size_bytes"]).all()
    assert s["packets_in_use_at_end"] == 0
    assert res.ports["tx_packets"].sum() == s["link_crossings"]
    assert s["time_errors"] == 0
