"""The queue-pair pool (rocesim/_core/qp.pxd): a flow holds transport state only while in flight."""
from helpers import lossy_incast
from rocesim import Simulation, topology


def test_a_chain_of_flows_holds_at_most_two_queue_pairs():
    """A child starts when its parent's last byte arrives, while the parent waits for the
    ACK of it: two queue pairs overlap for a one-way delay, never more."""
    sim = Simulation(topology.star(3, "100Gbps", "1us"))
    ids = [sim.add_flow(1 + k % 2, 0, 20_000) for k in range(200)]
    sim.add_dependencies(ids[1:], ids[:-1])
    res = sim.run()
    s = res.summary
    assert s["flows_completed"] == 200
    assert s["queue_pairs_peak"] == 2
    assert s["queue_pairs_in_use_at_end"] == 0


def test_flows_released_together_take_queue_pairs_only_when_the_nic_serves_them():
    """500 one-packet flows from one host, all at t = 0: a queue pair opens at a flow's
    first packet and closes at its ACK, so at any time each open one has a packet (its
    data or its ACK) in the network: the peak is bounded by the packets in flight, which
    the NIC's line rate over one round trip bounds, not by the 500 flows."""
    sim = Simulation(topology.star(2, "100Gbps", "1us"))
    for _ in range(500):
        sim.add_flow(0, 1, 1000)
    res = sim.run()
    s = res.summary
    assert s["flows_completed"] == 500
    assert s["queue_pairs_in_use_at_end"] == 0
    assert 1 < s["queue_pairs_peak"] <= s["packets_peak"]
    rtt_packets = 2 * 2e-6 * 100e9 / 8 / 1000           # four 1 us hops at 100 Gb/s, per 1 KB
    assert s["queue_pairs_peak"] < 2 * rtt_packets
    # the NIC sent them back to back: the last one waited for the 499 before it
    assert res.flows["fct_ns"].max() > 499 * 1000 * 8 / 100e9 * 1e9


def test_retransmission_counts_outlive_the_queue_pair():
    """Flows that lost packets finish (their queue pairs are gone) and still report what
    they sent again: the per-flow counts add up to the run's."""
    res = lossy_incast(4, "go_back_n")
    assert res.summary["flows_completed"] == 4 and res.summary["queue_pairs_in_use_at_end"] == 0
    assert res.summary["retx_bytes"] > 0
    assert res.flows["retx_bytes"].sum() == res.summary["retx_bytes"]
    assert res.flows["timeouts"].sum() == res.summary["timeouts"]
