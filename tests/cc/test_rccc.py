"""Receiver credits (RCCC: rocesim/_core/rccc.pyx, the receiver's pacer; credit.pxd, the
sender's credit), after uet-htsim's uec.cpp: closed-form bounds of an incast's queue, fair
1/N shares, the pacing rate, lossless and lossy delivery, determinism across threads."""
import numpy as np
import pytest

from rocesim import ScenarioError, Simulation, topology

WIRE = 1048 / 1000                 # wire bytes per payload byte (1000 B payload, 48 B header)


def incast(n, size, cc="none", nic=None, switch=None):
    sim = Simulation(topology.star(n + 1, "100Gbps", "1us"), cc=cc, nic={"rccc": True, **(nic or {})},
                     switch=switch)
    for h in range(1, n + 1):
        sim.add_flow(h, 0, size)
    res = sim.run(sample_interval="5us")
    port = int(np.flatnonzero(res.ports["peer_node"] == 0)[0])
    q = res.samples["queues"]
    mine = q["port"] == port
    return res, q["time_ns"][mine], q["queue_bytes"][mine]


def test_without_speculation_credits_bound_an_incast_queue():
    """32 -> 1, no speculative credit (each flow opens with one packet): the receiver grants
    16 KiB at 99% of its link rate, so what queues at its port is at most the first packet
    of every sender and one grant's worth; the incast takes its bytes at 99% of the rate."""
    n, size = 32, 500_000
    res, _, queue = incast(n, size, nic={"rccc_speculative": 0})
    assert queue.max() <= n * 1048 + 16_384 * WIRE
    assert res.summary["drops"] == 0 and res.summary["flows_completed"] == n
    assert (res.flows["delivered_bytes"] == size).all()
    ideal_ns = n * size * WIRE * 8 / 100 / 0.99
    assert res.flows["fct_ns"].max() == pytest.approx(ideal_ns, rel=0.01)


def test_after_the_speculative_burst_the_queue_never_grows_and_shares_are_equal():
    """8 -> 1 of 2 MB, 1.5 BDP of speculative credit each: the burst queues once (uet-htsim's
    runs show the same), then grants at 99% of the link let the queue only drain; every
    sender gets 1/8 of the link, so all finish within 1% of one another."""
    res, t, queue = incast(8, 2_000_000)
    burst = queue[t <= 20_000].max()
    assert burst > 8 * 1048
    assert queue[t > 20_000].max() <= burst
    assert queue[t > 1_000_000].max() < burst
    fct = res.flows["fct_ns"]
    assert fct.min() / fct.max() > 0.99


def test_a_lone_flow_runs_at_the_pacing_rate():
    """Alone, a flow is held to its receiver's grants: 99% of the link beyond its first
    1.5 BDP, so its slowdown lies between 1 and 1 / 0.99."""
    sim = Simulation(topology.star(3, "100Gbps", "1us"), nic={"rccc": True})
    f = sim.add_flow(1, 2, 2_000_000)
    slowdown = sim.run().flows["slowdown"][f]
    assert 1.002 < slowdown <= 1 / 0.99 + 0.001


def test_with_nscc_the_smaller_limit_holds_and_nothing_is_lost():
    """NSCC and credits together: the incast's queue after the burst stays below what NSCC
    alone allows (credits pace the senders under their windows); every byte arrives."""
    res, t, queue = incast(8, 2_000_000, cc="nscc")
    alone = Simulation(topology.star(9, "100Gbps", "1us"), cc="nscc")
    for h in range(1, 9):
        alone.add_flow(h, 0, 2_000_000)
    res_alone = alone.run(sample_interval="5us")
    q = res_alone.samples["queues"]
    port = int(np.flatnonzero(res_alone.ports["peer_node"] == 0)[0])
    q_alone = q["queue_bytes"][q["port"] == port]
    assert queue.max() < q_alone.max()
    assert (res.flows["delivered_bytes"] == res.flows["size_bytes"]).all()


@pytest.mark.parametrize("cc", ["none", "nscc"])
def test_lossy_switches_lose_no_byte_for_good(cc):
    """Without PFC the speculative burst overflows a small buffer: retransmissions (which
    need no credit) recover every byte."""
    res, _, _ = incast(16, 500_000, cc=cc, switch={"pfc": {"enabled": False}, "buffer": "1MB"})
    assert res.summary["drops"] > 0
    assert res.summary["flows_completed"] == 16
    assert (res.flows["delivered_bytes"] == res.flows["size_bytes"]).all()


@pytest.mark.parametrize("cc", ["none", "nscc"])
def test_one_thread_or_two_give_the_same_run(cc):
    def run(threads):
        sim = Simulation(topology.fat_tree(4, "100Gbps", "1us"), cc=cc, partition="leaves", nic={"rccc": True})
        for h in range(16):
            sim.add_flow(h, (h + 5) % 16, 300_000)
        for h in range(1, 9):
            sim.add_flow(h, 0, 200_000, start=10_000_000)
        return sim.run(threads=threads, progress=False)
    one, two = run(1), run(2)
    assert one.summary["flows_completed"] == 24
    assert (one.flows["fct_ns"] == two.flows["fct_ns"]).all()


def test_bad_credit_settings_are_refused_naming_the_key():
    for key, value in (("rccc_pace", 0), ("rccc_pace", 1.5), ("rccc_credit", "0B"), ("rccc_speculative", -1)):
        with pytest.raises(ScenarioError) as e:
            Simulation(topology.star(3, "100Gbps", "1us"), nic={"rccc": True, key: value})
        assert e.value.key == f"nic.{key}"
