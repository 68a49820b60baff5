"""Collectives (rocesim.training.collectives) in an idle network match their closed forms.

The closed forms of Thakur et al., "Optimization of collective communication operations in
MPICH", IJHPCA 2005.  On one 200G switch with 0.5 us links, a step's latency alpha is one
packet's store-and-forward path (two wires and a packet's serialization at the switch).
Every byte of payload costs 1048/1000 bytes on the wire, and a rank that receives while it
sends also carries a 60-byte ACK per received packet on its uplink: f = 1108/1000 for
the algorithms where every rank sends and receives at once.
"""
import numpy as np
import pytest

from helpers import ser_ps
from rocesim import ScenarioError, Simulation, topology

B = 200e9
D = 0.5e-6
ALPHA = 2 * D + ser_ps(1048, 200 * 10**9) * 1e-12
F = 1108 / 1000
MIB = 1024 * 1024


def run(op, algorithm, p=8, m=MIB, chunks=1, **kw):
    sim = Simulation(topology.star(p, "200Gbps", "0.5us"))
    rec = sim.add_collective(op, algorithm, "all", m, chunks=chunks, **kw)
    res = sim.run()
    assert res.summary["flows_completed"] == res.summary["flows_total"]
    return res, res.collectives["duration_ns"][0] * 1e-9, sim, rec


def test_worked_example_ring_allreduce_8x200G_1MiB():
    """2(p-1)(alpha + m/(pB)) with p = 8, m = 1 MiB, B = 200G: about 87.4 us before
    header overhead."""
    _, t, _, _ = run("allreduce", "ring")
    assert 87.4e-6 < t < 87.4e-6 * F * 1.01


@pytest.mark.parametrize("p", [4, 8])
def test_ring_allreduce(p):
    _, t, _, _ = run("allreduce", "ring", p=p)
    assert t == pytest.approx(2 * (p - 1) * (ALPHA + MIB / p * F * 8 / B), rel=0.02)


@pytest.mark.parametrize("op", ["reducescatter", "allgather"])
def test_ring_reducescatter_and_allgather(op):
    p = 8
    _, t, _, _ = run(op, "ring", p=p)
    assert t == pytest.approx((p - 1) * (ALPHA + MIB / p * F * 8 / B), rel=0.02)


def test_halving_doubling_allreduce():
    p = 8
    _, t, _, _ = run("allreduce", "halving_doubling", p=p)
    assert t == pytest.approx(2 * np.log2(p) * ALPHA + 2 * (p - 1) / p * MIB * F * 8 / B, rel=0.02)


def test_halving_doubling_needs_a_power_of_two():
    with pytest.raises(ScenarioError):
        run("allreduce", "halving_doubling", p=6)


def test_ring_bidir_moves_half_each_way():
    res, t, _, _ = run("allreduce", "ring_bidir")
    ring_t = run("allreduce", "ring")[1]
    # the same bytes in the same number of steps, but with half the data per flow:
    # each rank sends both ways at once, so the time is the ring's
    assert t == pytest.approx(ring_t, rel=0.05)
    assert res.flows["size_bytes"][~res.flows["is_compute"]].sum() == 2 * 7 * MIB


def test_direct_alltoall_is_nic_bound():
    """nccl-tests' convention: each rank sends m/p to every rank, itself included, so
    (p-1)/p of m crosses its NIC."""
    p, m = 8, 1_400_000
    res, t, _, rec = run("alltoall", "direct", p=p, m=m)
    assert res.flows["size_bytes"][rec.flows].sum() == p * (p - 1) * (m // p)
    assert t == pytest.approx((p - 1) / p * m * F * 8 / B + ALPHA, rel=0.03)


def test_pairwise_alltoall_takes_p_minus_1_steps():
    p, m = 8, 1_400_000
    _, t, _, _ = run("alltoall", "pairwise", p=p, m=m)
    assert t == pytest.approx((p - 1) * (ALPHA + m / p * F * 8 / B), rel=0.03)


def test_hierarchical_allreduce():
    p1, p2, m = 4, 2, MIB
    _, t, _, _ = run("allreduce", "hierarchical", p=p1 * p2, m=m, group_size=p1)
    expected = (2 * (p1 - 1) / p1 * m * F * 8 / B + 2 * (p2 - 1) / (p1 * p2) * m * F * 8 / B
                + 2 * (p1 - 1) * ALPHA + 2 * (p2 - 1) * ALPHA)
    assert t == pytest.approx(expected, rel=0.03)


def test_double_binary_tree_moves_the_right_bytes_and_pipelines():
    p, m = 8, MIB
    res, t1, _, _ = run("allreduce", "double_binary_tree", p=p, m=m)
    data = ~res.flows["is_compute"]
    # each tree reduces and broadcasts half of the data over its p-1 edges
    assert res.flows["size_bytes"][data].sum() == 2 * (p - 1) * m
    _, t8, _, _ = run("allreduce", "double_binary_tree", p=p, m=m, chunks=8)
    assert t8 < 0.6 * t1                      # chunks pipeline through the tree levels


@pytest.mark.parametrize("op", ["broadcast", "reduce"])
def test_chain_pipelines_with_chunks(op):
    p, m = 8, MIB
    _, t1, _, _ = run(op, "ring", p=p, m=m)
    _, t8, _, _ = run(op, "ring", p=p, m=m, chunks=8)
    hop = m * 8 / B
    # one chunk: a rank receives everything, then forwards it (no ACKs share its uplink)
    assert t1 == pytest.approx((p - 1) * (ALPHA + hop * 1048 / 1000), rel=0.02)
    assert t8 == pytest.approx((p - 1 + 7) * (ALPHA + hop / 8 * F), rel=0.05)


@pytest.mark.parametrize("op", ["broadcast", "reduce"])
def test_direct_rooted_is_bound_by_the_root_link(op):
    p, m = 8, 500_000
    _, t, _, _ = run(op, "direct", p=p, m=m)
    assert t == pytest.approx((p - 1) * m * 8 / B * 1048 / 1000 + ALPHA, rel=0.03)


def test_no_flow_starts_before_its_data_has_arrived():
    res, _, sim, rec = run("allreduce", "ring", chunks=3)
    children, parents = sim.dependencies()
    f = res.flows
    end = f["start_ns"] + np.where(f["is_compute"], f["fct_ns"], f["rx_fct_ns"])
    assert (f["start_ns"][children] >= end[parents] - 1e-9).all()
    # and each node starts exactly when its last parent is done (no delay here)
    last = np.full(len(end), -np.inf)
    np.maximum.at(last, children, end[parents])
    has = np.isfinite(last)
    np.testing.assert_allclose(f["start_ns"][has], last[has], atol=1e-6)


@pytest.mark.parametrize("op,algorithm", [("allreduce", "ring"), ("allreduce", "halving_doubling"),
                                          ("allreduce", "hierarchical"), ("allreduce", "double_binary_tree"),
                                          ("alltoall", "pairwise"), ("broadcast", "ring"), ("reduce", "ring")])
def test_a_late_rank_holds_back_what_needs_its_data(op, algorithm):
    """Rank 1's input is ready only at 500 us: it sends nothing before, and no rank is done
    before everything addressed to it has arrived."""
    sim = Simulation(topology.star(4, "200Gbps", "0.5us"))
    late = sim.add_compute(1, "500us")
    rec = sim.add_collective(op, algorithm, "all", 256 * 1024, chunks=2, group_size=2)
    sim.add_dependencies([rec.start_nodes[1]], [late])
    res = sim.run()
    f = res.flows
    flows = rec.flows
    from_1 = flows[f["src"][flows] == 1]
    assert (f["start_ns"][from_1] >= 500_000 - 1e-6).all()
    arrive = f["start_ns"] + f["rx_fct_ns"]
    for rank, done in enumerate(rec.done_nodes):
        to_rank = flows[f["dst"][flows] == rank]
        if to_rank.size:                                  # a broadcast root receives nothing
            assert f["start_ns"][done] >= arrive[to_rank].max() - 1e-6


def test_communicators_run_side_by_side():
    sim = Simulation(topology.star(8, "200Gbps", "0.5us"))
    a = sim.add_collective("allreduce", "ring", [0, 1, 2, 3], MIB)
    sim.add_collective("allreduce", "ring", [4, 5, 6, 7], MIB, after=[int(a.done_nodes[0])])
    res = sim.run()
    c = res.collectives
    assert c["start_ns"][1] == pytest.approx(res.flows["start_ns"][a.done_nodes[0]])
    assert c["duration_ns"][0] == pytest.approx(c["duration_ns"][1], rel=1e-6)


def test_collective_errors():
    sim = Simulation(topology.star(4, "200Gbps", "0.5us"))
    with pytest.raises(ScenarioError):
        sim.add_collective("allreduce", "pairwise", "all", MIB)
    with pytest.raises(ScenarioError):
        sim.add_collective("gossip", "ring", "all", MIB)
    with pytest.raises(ScenarioError):
        sim.add_collective("allreduce", "ring", [1], MIB)
    with pytest.raises(ScenarioError):
        sim.add_collective("allreduce", "hierarchical", "all", MIB, group_size=3)
