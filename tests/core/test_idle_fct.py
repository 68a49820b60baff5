"""A flow alone in an idle network finishes at its closed-form time, with slowdown 1.

The closed forms here are written out independently of the core's ideal-FCT code:
store-and-forward pipelining of n packets over the path, then the ACK's way back.
Serialization of b bytes at r bit/s takes ceil(8 b 1e12 / r) ps.  A run in parts (issue 20:
`partition="leaves"`, the links between switches cut) gives the same times.
"""
import math

import pytest

from helpers import ACK, HDR, MTU, ser_ps
from rocesim import Simulation, topology


PARTS = pytest.mark.parametrize("part", ["none", "leaves"], ids=["one_part", "leaves"])


def packets(size):
    n = math.ceil(size / MTU)
    return n, MTU + HDR, size - (n - 1) * MTU + HDR


@pytest.mark.parametrize("size", [1, 999, 1000, 1001, 64_000, 1_000_000, 2_345_678])
def test_star_single_flow_matches_closed_form(size):
    rate, d = 100 * 10**9, 10**6       # 100G, 1 us
    sim = Simulation(topology.star(hosts=4, rate="100Gbps", delay="1us"))
    f = sim.add_flow(1, 2, size)
    res = sim.run()
    n, S, L = packets(size)
    # two equal hops: the last packet leaves hop 2 after all n-1 full packets and itself
    if n == 1:
        last_byte = 2 * ser_ps(L, rate) + 2 * d
    else:   # the last packet waits for hop 2 to finish the n-1 full packets before it
        last_byte = n * ser_ps(S, rate) + ser_ps(L, rate) + 2 * d
    ack = 2 * (ser_ps(ACK, rate) + d)
    if n > 1 and ser_ps(L, rate) < ser_ps(ACK, rate):
        # the last ACK leaves the receiver behind the previous one (sent ser_ps(L) earlier)
        ack += ser_ps(ACK, rate) - ser_ps(L, rate)
    assert res.flows["fct_ns"][f] * 1000 == pytest.approx(last_byte + ack, abs=0.5)
    assert res.flows["rx_fct_ns"][f] * 1000 == pytest.approx(last_byte, abs=0.5)
    assert res.flows["slowdown"][f] == 1.0


@PARTS
def test_bottleneck_in_the_middle(part):
    """100G host links, a 25G switch-to-switch link: the bottleneck paces the pipeline."""
    t = topology.dumbbell(2, 2, "100Gbps", "1us", bottleneck_rate="25Gbps", bottleneck_delay="2us")
    sim = Simulation(t, partition=part)
    size = 500_000
    f = sim.add_flow(0, 2, size)
    res = sim.run()
    n, S, L = packets(size)
    r, rb = 100 * 10**9, 25 * 10**9
    # first packet to the bottleneck, all n-1 full packets through it, then the last
    # packet through the bottleneck and the last hop
    last_byte = ser_ps(S, r) + (n - 1) * ser_ps(S, rb) + ser_ps(L, rb) + ser_ps(L, r) + 4 * 10**6
    ack = 2 * (ser_ps(ACK, r) + 10**6) + ser_ps(ACK, rb) + 2 * 10**6
    assert res.flows["fct_ns"][f] * 1000 == pytest.approx(last_byte + ack, abs=0.5)
    assert res.flows["slowdown"][f] == 1.0


@PARTS
def test_fat_tree_inter_pod_with_faster_fabric(part):
    """HPCC-like path: 100G edge links, 400G fabric, 6 hops between pods."""
    t = topology.fat_tree(4, "100Gbps", "1us", fabric_rate="400Gbps", fabric_delay="1us")
    sim = Simulation(t, partition=part)
    size = 100_000
    f = sim.add_flow(0, 15, size)            # hosts 0 and 15 are in different pods
    res = sim.run()
    n, S, L = packets(size)
    r, rf = 100 * 10**9, 400 * 10**9
    # host links are the slowest: all packets through the first, the last one onwards
    last_byte = n * ser_ps(S, r) + 4 * ser_ps(L, rf) + ser_ps(L, r) + 6 * 10**6
    ack = 2 * ser_ps(ACK, r) + 4 * ser_ps(ACK, rf) + 6 * 10**6
    assert res.flows["fct_ns"][f] * 1000 == pytest.approx(last_byte + ack, abs=0.5)
    assert res.flows["slowdown"][f] == 1.0


@PARTS
def test_many_disjoint_flows_all_have_slowdown_one(part):
    """Flows that share no link do not disturb each other (ACKs ride the other direction):
    on a star, and across a fat tree (pod 0 to pod 2 and pod 1 to pod 3: every link of one
    flow's way and its ACKs' is in other pods, or joins other pods, than the other's)."""
    for t, pairs in ((topology.star(hosts=8, rate="100Gbps", delay="1us"), [(a, a + 1) for a in range(0, 8, 2)]),
                     (topology.fat_tree(4, "100Gbps", "1us"), [(0, 8), (4, 12)])):
        sim = Simulation(t, partition=part)
        for k, (a, b) in enumerate(pairs):
            sim.add_flow(a, b, 300_000, start=k * 2000)
        res = sim.run()
        assert list(res.flows["slowdown"]) == [1.0] * len(pairs)


def whole_ns(nbytes, rate_bps):
    """nic.serialization: whole_ns: the exact time rounded down to whole ns, in ps."""
    return nbytes * 8 * 10**12 // rate_bps // 1000 * 1000


@pytest.mark.parametrize("rate_gbps", [100, 400, 800])
def test_whole_ns_serialization(rate_gbps):
    """nic.serialization: whole_ns: every frame takes its time on the wire rounded down to
    whole ns (at 800G a 60 B ACK takes no time at all); the ideal FCT stays exact, so the
    slowdown falls a little below 1."""
    rate, d = rate_gbps * 10**9, 10**6
    sim = Simulation(topology.star(hosts=3, rate=f"{rate_gbps}Gbps", delay="1us"),
                     nic={"serialization": "whole_ns"})
    f = sim.add_flow(1, 2, 3000)
    res = sim.run()
    S = MTU + HDR
    last_byte = 3 * whole_ns(S, rate) + whole_ns(S, rate) + 2 * d
    ack = 2 * (whole_ns(ACK, rate) + d)
    exact = 4 * ser_ps(S, rate) + 2 * d + 2 * (ser_ps(ACK, rate) + d)
    assert res.flows["fct_ns"][f] * 1000 == pytest.approx(last_byte + ack, abs=0.5)
    assert res.flows["ideal_fct_ns"][f] * 1000 == pytest.approx(exact, abs=0.5)
    assert res.flows["slowdown"][f] < 1.0


def test_whole_ns_pacing():
    """A NIC pacing below line rate spaces packets by the whole-ns time at the paced rate."""
    rate, lim, d, n = 100 * 10**9, 10 * 10**9, 10**6, 10
    fct = {}
    for mode in ("exact", "whole_ns"):
        sim = Simulation(topology.star(hosts=3, rate="100Gbps", delay="1us"), nic={"serialization": mode})
        f = sim.add_flow(1, 2, n * MTU, rate="10Gbps")
        fct[mode] = sim.run().flows["fct_ns"][f] * 1000
    S = MTU + HDR
    q = whole_ns
    assert fct["whole_ns"] == pytest.approx((n - 1) * q(S, lim) + 2 * q(S, rate) + 2 * d
                                            + 2 * (q(ACK, rate) + d), abs=0.5)
    assert fct["exact"] == pytest.approx((n - 1) * ser_ps(S, lim) + 2 * ser_ps(S, rate) + 2 * d
                                         + 2 * (ser_ps(ACK, rate) + d), abs=0.5)
