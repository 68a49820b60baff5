"""Go-back-N receivers under re-routing (issue 31): a switch that spreads one connection over
several paths reorders its packets, an ordered receiver discards what arrives out of order
and NACKs the gap once per `nic.nack_interval`.  A flow's short last packet overtakes the
full one before it; when the retransmissions the NACK asked for are reordered again, the
receiver holds its NACK back and nothing asks for the last packet any more.  With no
timeout the flow waits for good; `nic.rto: auto` arms the sender's timeout on lossless
priorities too whenever a run may spread connections into ordered receivers (as a RoCE
requester's local ACK timeout recovers it), and leaves single-path runs as they were.
"""
import numpy as np
import pytest

from rocesim import Simulation, topology, traffic

SPRAY = {"scheme": "spray"}
ADAPTIVE = {"scheme": "adaptive", "gap": "0us"}
SEEDS = range(1, 6)


def rerouted_run(balancing, seed, nic=None):
    """2 leaves x 4 hosts, 4 spines, 100 Gb/s, PFC: each host's 4 flows of 16,384 bytes (4
    packets of 4000 B and one of 384 B) to the host across, started at random in the first
    20 us, into go-back-N receivers."""
    t = topology.leaf_spine(2, 4, 4, "100Gbps", "1us")
    sim = Simulation(t, seed=seed, partition="none", nic={"payload": "4000B", **(nic or {})},
                     switch={"load_balancing": balancing})
    rng = np.random.default_rng(seed)
    src = np.repeat(np.arange(8), 4)
    sim.add_flows(traffic.FlowTable(src, (src + 4) % 8, np.full(src.size, 16_384),
                                    rng.integers(0, 20_000, src.size) * 1000))
    return sim.run(progress=False, threads=1)


@pytest.mark.parametrize("balancing", [SPRAY, ADAPTIVE], ids=["spray", "adaptive"])
def test_a_go_back_n_flow_whose_nack_is_held_back_waits_for_good_without_a_timeout(balancing):
    """Timeout off (`nic.rto: 0`): on some seed a flow never finishes, and the run ends
    stalled (nothing left to move it) long before any timeout would have fired."""
    stalled = [rerouted_run(balancing, seed, {"rto": "0us"}) for seed in SEEDS]
    stalled = [r for r in stalled if np.isnan(r.flows["fct_ns"]).any()]
    assert stalled
    for res in stalled:
        assert res.summary["stalled"] and res.summary["sim_time_ns"] < 200_000


@pytest.mark.parametrize("balancing", [SPRAY, ADAPTIVE], ids=["spray", "adaptive"])
def test_the_timeout_of_auto_recovers_go_back_n_under_re_routing(balancing):
    """`nic.rto: auto` (1 ms on every priority here): every flow of every seed finishes,
    some only by a timeout."""
    runs = [rerouted_run(balancing, seed) for seed in SEEDS]
    for res in runs:
        assert not np.isnan(res.flows["fct_ns"]).any() and not res.summary["stalled"]
        assert res.summary["multipath_into_ordered"] is True
    assert sum(res.summary["timeouts"] for res in runs) > 0


@pytest.mark.parametrize("balancing, nic, every_priority", [
    ({}, {}, False),                                     # one path per connection
    (SPRAY, {"delivery": "unordered"}, False),           # reordering taken as it comes
    (SPRAY, {}, True),
    ({"scheme": "ecmp", "tiers": {1: {"scheme": "flowlet"}}}, {}, True),
    ({}, {"entropy_every": 8}, True),
    (SPRAY, {"rto": "2ms"}, True),                       # a time given: every priority, as always
])
def test_auto_arms_the_timeout_on_lossless_priorities_only_under_multipath_into_ordered(balancing, nic,
                                                                                        every_priority):
    """The priorities whose flows arm the timeout (the core's `rto_mask`): the lossy ones
    (priority 0 here: PFC covers 1..7) unless a connection may take several paths into
    ordered receivers."""
    sim = Simulation(topology.leaf_spine(2, 2, 1, "100Gbps", "1us"), nic=nic, switch={"load_balancing": balancing})
    assert sim.network.params["rto_mask"] == (0xFF if every_priority else 0x01)
