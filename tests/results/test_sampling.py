"""Opt-in sampling of rates, throughput and queues (rocesim.results.sampling)."""
import numpy as np
import pytest

from helpers import write_scenario
from rocesim import Simulation, topology
from rocesim.cli import main


def incast_run(**kw):
    sim = Simulation(topology.star(5, "100Gbps", "1us"))
    for h in (1, 2, 3, 4):
        sim.add_flow(h, 0, 1_000_000)
    return sim.run(**kw)


def test_no_sampling_by_default():
    assert incast_run().samples is None


def test_samples_are_periodic_and_consistent():
    res = incast_run(sample_interval="10us")
    r, q = res.samples["rates"], res.samples["queues"]
    times = np.unique(r["time_ns"])
    assert (np.diff(times) == 10_000).all() and times[0] == 10_000
    # while all four send, they share the receiver link: delivered throughput adds up to
    # its payload rate, and each sender runs at line rate (no congestion control)
    busy = (r["time_ns"] >= 20_000) & (r["time_ns"] <= 300_000)
    per_sample = np.bincount(np.searchsorted(times, r["time_ns"][busy]), weights=r["throughput_bps"][busy])
    per_sample = per_sample[per_sample > 0]
    assert per_sample == pytest.approx(100e9 * 1000 / 1048, rel=0.02)
    assert (r["rate_bps"] == 100e9).all()
    # the queue towards the receiver grows while four senders share it
    port = int(np.flatnonzero(res.ports["peer_node"] == 0)[0])
    qq = q["queue_bytes"][q["port"] == port]
    assert qq.max() > 100_000
    assert set(np.unique(q["port"])) == set(np.flatnonzero(res.ports["node"] >= 5))


def test_sampling_does_not_change_the_run():
    a, b = incast_run(), incast_run(sample_interval="3us")
    np.testing.assert_array_equal(a.flows["fct_ns"], b.flows["fct_ns"])
    assert a.summary["events"] == b.summary["events"]


def test_queue_ports_restrict_the_queue_samples():
    res = incast_run(sample_interval="10us", queue_ports=[1, 3])
    assert set(np.unique(res.samples["queues"]["port"])) == {1, 3}


def test_cli_writes_rates_and_queues(tmp_path):
    raw = write_scenario(tmp_path, """
topology: {kind: star, hosts: 4, link: {rate: 100Gbps, delay: 1us}}
traffic: [{kind: incast, senders: [1, 2, 3], receiver: 0, size: 200KB}]
output: {sample_interval: 5us, plot: false}
""")
    assert main(["run", str(raw), "-o", str(tmp_path / "o"), "-q"]) == 0
    rates = (tmp_path / "o" / "rates.csv").read_text().splitlines()
    queues = (tmp_path / "o" / "queues.csv").read_text().splitlines()
    assert rates[0] == "time_ns,flow_id,rate_bps,throughput_bps" and len(rates) > 10
    assert queues[0] == "time_ns,node,port,queue_bytes" and len(queues) > 10
    pfc = (tmp_path / "o" / "pfc.csv").read_text().splitlines()
    assert pfc[0] == "port,node,peer_node,prio,paused_ns,pauses_sent_by_peer"
