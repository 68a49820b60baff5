"""Per-packet load balancing into receivers that take packets out of order (issue 31 item
4): a permutation and an all-to-all across a 1:1 leaf-spine fabric, sprayed or adaptively
routed per packet.  `unordered` receivers place what arrives and SACK it, so the fabric's
uplinks load evenly (ECMP on the same seed does not), every byte arrives once, and nothing
is sent again while the reordering stays within `nic.reorder_threshold`; `ordered`
receivers under the same spraying NACK each gap (go-back-N's storm); lossy, each dropped
packet is sent again once; and the run is the same on 1 and 2 threads.
"""
import numpy as np
import pytest

from helpers import MTU, assert_every_byte_once, written_outputs
from rocesim import Simulation, topology, traffic
from rocesim.results.run import MACHINE_KEYS

SEED = 3
DEEP = 1000            # a reorder threshold deeper than any reordering here
BALANCED = 1.2         # uplink_imbalance per-packet balancing stays under (ECMP's is above)
SPRAY = {"scheme": "spray"}
ADAPTIVE = {"scheme": "adaptive", "gap": "0us"}
PATTERNS = ("permutation", "all_to_all")
LOSSY = {"buffer": "150KB", "pfc": {"enabled": False}}


def fabric_run(pattern, balancing, nic, switch=None, threads=1, partition="none", size=1_000_000, cc=None):
    """`pattern` across 4 leaves x 4 hosts and 4 spines at 100 Gb/s (a 400 KB buffer, so that
    PFC pauses), run to the end: `permutation` is each host's `size` bytes (1 MB) to the host
    one leaf on (every flow crosses the fabric, every leaf sends alike), `all_to_all` each
    host's 66,666 bytes to each other host."""
    t = topology.leaf_spine(4, 4, 4, "100Gbps", "1us")
    sim = Simulation(t, seed=SEED, nic=nic, partition=partition, cc=cc,
                     switch={"buffer": "400KB", "load_balancing": balancing, **(switch or {})})
    hosts = np.arange(t.n_hosts)
    if pattern == "permutation":
        src, dst = hosts, (hosts + 4) % t.n_hosts
    else:
        src, dst = (a.ravel() for a in np.meshgrid(hosts, hosts, indexing="ij"))
        src, dst, size = src[src != dst], dst[src != dst], 66_666
    sim.add_flows(traffic.FlowTable(src, dst, np.full(src.size, size), np.zeros(src.size)))
    return sim.run(progress=False, threads=threads)


@pytest.mark.parametrize("pattern, balancing", [("permutation", SPRAY), ("permutation", ADAPTIVE),
                                                ("all_to_all", SPRAY), ("all_to_all", ADAPTIVE)],
                         ids=["permutation-spray", "permutation-adaptive", "all_to_all-spray",
                              "all_to_all-adaptive"])
def test_per_packet_balancing_into_unordered_receivers_loads_the_uplinks_evenly(pattern, balancing):
    """Lossless (nothing dropped; random spraying's queues make PFC pause), every packet
    placed: packets overtake each other, yet none is NACKed or sent again; the busiest uplink carries less than 1.2 times
    its tier's mean, where ECMP's connections collide above that (adaptive routing too in
    the all-to-all, whose queues stay below its first level: per packet, its ties go at
    random, not by the hash that would make it ECMP there)."""
    res = fabric_run(pattern, balancing, {"delivery": "unordered", "reorder_threshold": DEEP})
    s, f = res.summary, res.flows
    assert_every_byte_once(res)
    assert s["drops"] == 0 and (s["pfc_pauses"] > 0 or balancing is not SPRAY)
    assert s["reordered_packets"] > 0 and s["reordered_packets"] == f["reordered_packets"].sum()
    assert s["spurious_retx_bytes"] == s["retx_bytes"] == s["nacks"] == s["timeouts"] == 0
    assert s["delivery"] == "unordered" and s["multipath_into_ordered"] is False
    assert s["uplink_imbalance"] < BALANCED
    ecmp = fabric_run(pattern, {"scheme": "ecmp"}, {}).summary
    assert ecmp["uplink_imbalance"] > BALANCED and ecmp["reordered_packets"] == 0
    assert ecmp["multipath_into_ordered"] is False


def goodput_of_line_rate(res):
    """A permutation's goodput per host (bytes over the last finish) as a fraction of what a
    100 Gb/s host link carries of payload while it also carries the ACKs of the data it
    receives (one 60 B ACK per 1000 B payload + 48 B header: 90.25 Gb/s)."""
    f = res.flows
    line = 100 * 1000 / (1000 + 48 + 60)
    return f["size_bytes"][0] * 8 / np.max(f["start_ns"] + f["fct_ns"]) / line


@pytest.mark.parametrize("cc, switch", [(None, None), ("dcqcn", {"buffer": "32MB"})], ids=["none", "dcqcn"])
def test_per_packet_balancing_brings_a_permutation_to_line_rate(cc, switch):
    """Issue 31, Measured: across the 1:1 fabric, each host's 4 MB to the host one leaf on
    reaches 95% of line rate under per-packet adaptive routing and round-robin spraying
    (the ACKs balanced as data is, per-packet ties at random: lb_adaptive.pyx); random
    spraying beats ECMP's collisions, but in the 400 KB buffer its queues (a random walk
    at full load) trip PFC, which holds it below.  DCQCN, with a buffer deep enough for
    its ECN thresholds, sees no mark.  (validation/lb_line_rate.py has the whole table.)"""
    def run(balancing, nic):
        return fabric_run("permutation", balancing, nic, switch=switch, size=4_000_000, cc=cc)
    unordered = {"delivery": "unordered", "reorder_threshold": DEEP}
    for balancing in (ADAPTIVE, {"scheme": "spray", "order": "round_robin"}):
        res = run(balancing, unordered)
        assert goodput_of_line_rate(res) >= 0.95
        assert res.summary["ecn_echoes"] == 0 and res.summary["retx_bytes"] == 0
    spray = goodput_of_line_rate(run(SPRAY, unordered))
    ecmp = goodput_of_line_rate(run({"scheme": "ecmp"}, {}))
    assert ecmp < 0.6 < spray
    if switch is None:
        assert spray < 0.92


def test_a_shallow_reorder_threshold_resends_what_was_only_late():
    """TCP's threshold of 3 packets under random spraying: a packet overtaken by 3 is
    declared lost and sent again although it arrives; what was resent is exactly what
    arrived twice (nothing was lost)."""
    s = fabric_run("permutation", SPRAY, {"delivery": "unordered", "reorder_threshold": 3}).summary
    assert s["drops"] == 0 and s["nacks"] == 0
    assert s["spurious_retx_bytes"] == s["retx_bytes"] > 100 * MTU


def test_spraying_into_ordered_receivers_makes_go_back_n_storms():
    """The same spraying into go-back-N receivers: each reordered packet is a gap, NACKed,
    and the sender resends from it, much of it already held; the flows finish many times
    later than with unordered receivers, and the summary says why."""
    unordered = fabric_run("permutation", SPRAY, {"delivery": "unordered", "reorder_threshold": DEEP})
    ordered = fabric_run("permutation", SPRAY, {"delivery": "ordered"})
    s = ordered.summary
    assert_every_byte_once(ordered)
    assert s["drops"] == 0 and s["nacks"] > 1000
    assert s["retx_bytes"] > 10 * ordered.flows["size_bytes"].sum()
    assert s["spurious_retx_bytes"] > 0
    assert s["delivery"] == "ordered" and s["multipath_into_ordered"] is True
    assert "ordered receivers under multipath load balancing" in ordered.describe()
    assert np.nanmax(ordered.flows["fct_ns"]) > 5 * np.nanmax(unordered.flows["fct_ns"])


@pytest.mark.parametrize("pattern", PATTERNS)
def test_lossy_spraying_resends_each_dropped_packet_once(pattern):
    """No PFC and a small buffer (ACKs in the strict high priority, so that only data is
    dropped): every flow completes without a NACK, and the bytes resent less those that
    arrived twice are the packets dropped."""
    res = fabric_run(pattern, SPRAY, {"delivery": "unordered", "ack_high_priority": True}, switch=LOSSY)
    s = res.summary
    assert_every_byte_once(res)
    assert s["nacks"] == 0 and s["pfc_pauses"] == 0
    assert s["retx_bytes"] - s["spurious_retx_bytes"] == MTU * s["drops"]
    if pattern == "permutation":
        assert s["drops"] > 50


@pytest.mark.parametrize("pattern", PATTERNS)
def test_a_sprayed_unordered_run_in_parts_is_the_same_on_1_and_2_threads(pattern, tmp_path):
    """Random spraying draws from each part's own random stream, the receive records and
    their SACKs cross the cut links: every output is byte for byte the same (summary.json
    without its timing keys), spurious resends included."""
    outs = []
    for threads in (1, 2):
        res = fabric_run(pattern, SPRAY, {"delivery": "unordered"}, threads=threads, partition="leaves")
        assert res.threads == threads and res.summary["parts"] > 1
        outs.append(written_outputs(res, tmp_path / str(threads)))
    assert outs[0] == outs[1]
    assert outs[0][1]["reordered_packets"] > 0
    if pattern == "permutation":
        assert outs[0][1]["spurious_retx_bytes"] > 0


@pytest.mark.parametrize("balancing, nic, multipath", [
    ({}, {}, False),
    ({"scheme": "ecmp", "tiers": {1: {"scheme": "flowlet"}}}, {}, True),
    (ADAPTIVE, {}, True),
    ({}, {"entropy_every": 8}, True),
    (SPRAY, {"delivery": "unordered"}, False),
])
def test_the_summary_flags_multipath_balancing_into_ordered_receivers(balancing, nic, multipath):
    """A scheme other than ECMP at any tier, or the senders' own entropy, may send one
    connection over several paths: with ordered receivers the summary says so."""
    t = topology.leaf_spine(2, 2, 1, "100Gbps", "1us")
    sim = Simulation(t, nic=nic, switch={"load_balancing": balancing})
    sim.add_flow(0, 1, 10_000)
    assert sim.run(progress=False).summary["multipath_into_ordered"] is multipath
