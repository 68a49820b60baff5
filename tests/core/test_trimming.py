"""Packet trimming at the switch (issue 32 item 3): on a lossy fabric a data packet the
buffer would drop (or above `switch.trimming.threshold`) goes on as its header at the
control priority; its receiver NACKs it at once and its sender sends that packet again.
An 8-to-1 incast that drops and times out without trimming loses nothing with it: no drop,
no timeout, every trimmed packet sent again exactly once, every byte delivered once; the
counts agree per port, per flow and in the summary; PFC's lossless priorities are never
trimmed (flow mode refuses trimming: tests/flowmode/test_flow_mode.py); and the run is the
same on 1 and 2 threads."""
import numpy as np
import pytest

from helpers import MTU, assert_every_byte_once, written_outputs
from rocesim import Simulation, topology, traffic
from rocesim.errors import ScenarioError

SENDERS, SIZE = 8, 200_000            # 8 x 200 packets of 1000 B into one 100 Gb/s port
LOSSY = {"buffer": "300KB", "pfc": {"enabled": False}}


def incast(trimming, nic=None, switch=None, prio=3, senders=SENDERS):
    """`senders` hosts of a star send SIZE bytes each to host 0 at once, no congestion
    control, unordered receivers unless `nic` says otherwise."""
    t = topology.star(senders + 1, "100Gbps", "1us")
    sim = Simulation(t, seed=1, nic={"delivery": "unordered", **(nic or {})},
                     switch={**LOSSY, "trimming": trimming, **(switch or {})})
    for k in range(1, senders + 1):
        sim.add_flow(k, 0, SIZE, prio=prio)
    return sim, sim.run(progress=False)


def assert_counts_agree(sim, res):
    """The summary's total is the ports' sum, and every header reached its receiver; only
    the congested port (the switch's towards host 0) trims."""
    s = res.summary
    assert s["trimmed"] == res.ports["trimmed"].sum() == res.flows["trimmed"].sum() > 0
    into_receiver = (sim.ports.node == sim.topology.n_hosts) & (sim.ports.peer_node == 0)
    assert res.ports["trimmed"][~into_receiver].sum() == 0


def test_without_trimming_the_incast_drops_and_times_out():
    _, res = incast({"enabled": False})
    s = res.summary
    assert s["drops"] == s["buffer_drops"] > 0 and s["timeouts"] > 0
    assert s["trimmed"] == 0 and not res.flows["trimmed"].any() and not res.ports["trimmed"].any()
    assert_every_byte_once(res)


def test_trimming_loses_nothing_and_resends_each_trimmed_packet_once():
    sim, res = incast({"enabled": True})
    s, f = res.summary, res.flows
    assert s["drops"] == 0 and s["timeouts"] == 0
    assert_counts_agree(sim, res)
    # each trimmed packet NACKed once and sent again once (full packets: MTU bytes each),
    # and nothing sent again arrived twice
    assert s["nacks"] == s["trimmed"]
    assert list(f["retx_bytes"]) == list(f["trimmed"] * MTU)
    assert s["spurious_retx_bytes"] == 0
    assert_every_byte_once(res)
    # far sooner than the drops' timeouts
    assert s["sim_time_ns"] < incast({"enabled": False})[1].summary["sim_time_ns"] / 5


def test_a_threshold_below_the_drop_point_trims_more_and_still_loses_nothing():
    _, auto = incast({"enabled": True})
    sim, res = incast({"enabled": True, "threshold": "50KB"})
    s = res.summary
    assert s["drops"] == 0 and s["timeouts"] == 0 and s["trimmed"] > auto.summary["trimmed"]
    assert s["retx_bytes"] == s["trimmed"] * MTU
    assert_counts_agree(sim, res)
    assert_every_byte_once(res)


@pytest.mark.parametrize("recovery", ["selective_repeat", "go_back_n"])
def test_ordered_receivers_nack_trimmed_packets(recovery):
    """Selective repeat resends each trimmed packet once, as unordered delivery does (besides
    a NACK of each out-of-order packet); go-back-N NACKs the receiver's point (at once when
    the trimmed packet is the one it waits for, else paced as for an out-of-order packet)
    and rewinds to it, so it resends more, yet loses nothing."""
    sim, res = incast({"enabled": True}, nic={"delivery": "ordered", "loss_recovery": recovery}, senders=4)
    s = res.summary
    assert s["drops"] == 0
    assert_counts_agree(sim, res)
    assert_every_byte_once(res)
    if recovery == "selective_repeat":
        assert s["nacks"] >= s["trimmed"] and s["timeouts"] == 0
        assert s["retx_bytes"] == s["trimmed"] * MTU and s["spurious_retx_bytes"] == 0
    else:
        assert 0 < s["nacks"] < s["trimmed"] and s["retx_bytes"] > s["trimmed"] * MTU


def test_lossless_priorities_are_never_trimmed():
    """PFC on priority 3 only: flows there pause and nothing is trimmed; flows on priority 4
    (lossy) are trimmed.  PFC on every data priority leaves nothing to trim: refused."""
    pfc3 = {"buffer": "1MB", "pfc": {"enabled": True, "priorities": [3]}}
    _, lossless = incast({"enabled": True}, switch=pfc3, prio=3)
    assert lossless.summary["trimmed"] == 0 and lossless.summary["drops"] == 0
    assert lossless.summary["pfc_pauses"] > 0
    _, lossy = incast({"enabled": True}, switch=pfc3, prio=4)
    assert lossy.summary["trimmed"] > 0 and lossy.summary["drops"] == 0
    with pytest.raises(ScenarioError, match="switch.trimming.enabled.*lossy"):
        Simulation(topology.star(2, "100Gbps", "1us"), switch={"trimming": {"enabled": True}})


def test_trimming_across_a_fabric_is_the_same_on_one_and_two_threads(tmp_path):
    """A permutation across a lossy leaf-spine cut into parts by leaves, sprayed by REPS into
    unordered receivers with control packets at high priority, trimmed above 20 KB: trims on
    several ports, the same outputs for 1 and 2 threads."""
    def run(threads):
        t = topology.leaf_spine(4, 4, 4, "100Gbps", "1us")
        sim = Simulation(t, seed=3, partition="leaves",
                         nic={"delivery": "unordered", "entropy": "reps", "ack_high_priority": True},
                         switch={"buffer": "150KB", "pfc": {"enabled": False},
                                 "trimming": {"enabled": True, "threshold": "20KB"}})
        hosts = np.arange(t.n_hosts)
        sim.add_flows(traffic.FlowTable(hosts, (hosts + 4) % t.n_hosts, np.full(16, 500_000), np.zeros(16)))
        return sim.run(progress=False, threads=threads)
    one = run(1)
    assert one.summary["parts"] > 1 and one.summary["trimmed"] > 0 and one.summary["drops"] == 0
    assert (one.ports["trimmed"] > 0).sum() > 1
    assert_every_byte_once(one)
    assert written_outputs(one, tmp_path / "1") == written_outputs(run(2), tmp_path / "2")


@pytest.mark.parametrize("cc, rccc", [("nscc", False), ("none", True), ("nscc", True)],
                         ids=["nscc", "rccc", "nscc+rccc"])
def test_a_trimmed_packet_goes_again_within_window_and_credit(cc, rccc):
    """Under the Ultra Ethernet transport a trimmed packet leaves flight on its NACK and goes
    again only when NSCC's window has room and RCCC's credit is above zero (its receiver
    grants its bytes again), as uet-htsim's sender does.  Sent again at once, each resend met
    the same full port and was trimmed again: a 16-to-1 incast of 3,200 packets trimmed
    39,000 to 998,000 times and took 1.8 to 20 times the receiver's link time.  Now fewer trims
    than packets, and the incast ends within 15% of that link time (bytes x 1048/1000 / 100 Gb/s)."""
    senders, packets = 16, 16 * SIZE // MTU
    sim = Simulation(topology.star(senders + 1, "100Gbps", "1us"), seed=1, transport="uet", cc=cc,
                     nic={"rccc": rccc}, switch={"trimming": {"threshold": "50KB"}})
    for k in range(1, senders + 1):
        sim.add_flow(k, 0, SIZE)
    res = sim.run(progress=False)
    s = res.summary
    assert s["drops"] == 0 and 0 < s["trimmed"] < packets
    assert_every_byte_once(res)
    link_time_ns = senders * SIZE * 1048 / 1000 * 8 / 100
    assert s["sim_time_ns"] < 1.15 * link_time_ns
