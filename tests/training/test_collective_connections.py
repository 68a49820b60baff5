"""The connections collectives ride (issue 31, rocesim.training.connections): with
`nccl.connections: persistent` NCCL's ring has one connection per (communicator, channel,
peer pair), set up once: every slice, loop, collective and iteration of the communicator
rides its `qps_per_connection` queue pairs, split or round robin; textbook algorithms one
per (communicator, peer pair); point-to-point transfers one per pair of ranks of a job.
Without it (the default) every flow is its own queue pair."""
import numpy as np
import pytest

from rocesim import Simulation, scenario, topology
from rocesim.network import platform as pf
from rocesim.network.platform import ScaleUp
from rocesim.training.collectives import add_sendrecv
from rocesim.training.graph import Graph

MIB = 1 << 20
PERSISTENT = {"connections": "persistent", "buffer": "256KiB"}      # (small chunks: several loops)


def platform(servers=2, gpus=4):
    return pf.rail_optimized(servers, gpus, "400Gbps", "1us", ScaleUp(2880 * 10**9, 10**6))


def labels_by_pair(sim, flows):
    """{(src, dst): the set of queue-pair labels} of the data flows among `flows`."""
    src, dst, qp = (sim.flow_column(c)[flows] for c in ("src", "dst", "qp"))
    data = sim.flow_column("compute")[flows] == 0
    out: dict = {}
    for s, d, q in zip(src[data].tolist(), dst[data].tolist(), qp[data].tolist()):
        out.setdefault((s, d), set()).add(q)
    return out


@pytest.mark.parametrize("Q", [1, 2])
def test_nccl_ring_rides_one_connection_per_channel_and_peer_pair_with_its_queue_pairs(Q):
    """2 servers x 4 GPUs, 4 channels per NIC: each directed NIC pair carries its rail's 4
    channels, so 4 connections of Q queue pairs; an all-gather on the same ranks rides the
    same ones; another job's communicator others."""
    sim = Simulation(platform(), nccl={**PERSISTENT, "qps_per_connection": Q})
    one = sim.add_collective("allreduce", "nccl_ring", "all", 8 * MIB)
    two = sim.add_collective("allgather", "nccl_ring", "all", 4 * MIB)
    other = sim.add_collective("allreduce", "nccl_ring", "all", 4 * MIB, job="b")
    first = labels_by_pair(sim, one.flows)
    assert len(first) == 8 and all(len(q) == 4 * Q for q in first.values())
    assert all(min(q) >= 0 for q in first.values())
    assert labels_by_pair(sim, two.flows) == first
    theirs = labels_by_pair(sim, other.flows)
    assert theirs.keys() == first.keys() and all(not (theirs[k] & first[k]) for k in first)
    everything = set().union(*first.values())
    assert len(everything) == 8 * 4 * Q                              # no two pairs share a label


def test_round_robin_sends_whole_slices_on_the_queue_pairs_in_turn():
    plat = platform()
    split = Simulation(plat, nccl={**PERSISTENT, "qps_per_connection": 2})
    rr = Simulation(plat, nccl={**PERSISTENT, "qps_per_connection": 2, "qp_spread": "round_robin"})
    one = Simulation(plat, nccl={**PERSISTENT, "qps_per_connection": 1})
    recs = [s.add_collective("allreduce", "nccl_ring", "all", 8 * MIB) for s in (split, rr, one)]
    data = [s.flow_column("compute")[r.flows] == 0 for s, r in zip((split, rr, one), recs)]
    counts = [int(d.sum()) for d in data]
    assert counts[0] == 2 * counts[2] and counts[1] == counts[2]     # split in two; whole slices
    sizes = [s.flow_column("size")[r.flows][d] for s, r, d in zip((split, rr, one), recs, data)]
    assert sizes[1].sum() == sizes[2].sum() and sorted(sizes[1]) == sorted(sizes[2])
    qp = rr.flow_column("qp")[recs[1].flows][data[1]]
    labels, per_label = np.unique(qp, return_counts=True)
    assert labels.size == 8 * 4 * 2
    # each connection's slices alternate: its two queue pairs carry as many (+-1)
    pair = labels_by_pair(rr, recs[1].flows)
    assert all(len(q) == 8 for q in pair.values())
    assert per_label.max() - per_label.min() <= 1


def test_the_stream_pipeline_rides_the_same_connections():
    plat = platform()
    nccl = {**PERSISTENT, "qps_per_connection": 2}
    slices, stream = Simulation(plat, nccl=nccl), Simulation(plat, nccl={**nccl, "pipeline": "stream"})
    a = slices.add_collective("allreduce", "nccl_ring", "all", 8 * MIB)
    b = stream.add_collective("allreduce", "nccl_ring", "all", 8 * MIB)
    assert labels_by_pair(slices, a.flows) == labels_by_pair(stream, b.flows)


def test_textbook_algorithms_ride_one_connection_per_communicator_and_peer_pair():
    topo = topology.leaf_spine(2, 2, 4, "100Gbps", "1us")
    sim = Simulation(topo, nccl={"connections": "persistent"})
    first = sim.add_collective("allreduce", "ring", [0, 1, 4, 5], "1MB", chunks=4)
    again = sim.add_collective("allreduce", "ring", [0, 1, 4, 5], "1MB", chunks=2)
    subset = sim.add_collective("allreduce", "ring", [0, 4], "1MB")
    halving = sim.add_collective("allreduce", "halving_doubling", [0, 1, 4, 5], "1MB")
    pairs = labels_by_pair(sim, first.flows)
    assert set(pairs) == {(0, 1), (1, 4), (4, 5), (5, 0)} and all(len(q) == 1 for q in pairs.values())
    assert labels_by_pair(sim, again.flows) == pairs
    assert labels_by_pair(sim, subset.flows)[(0, 4)].isdisjoint(set().union(*pairs.values()))
    assert set().union(*labels_by_pair(sim, halving.flows).values()).isdisjoint(set().union(*pairs.values()))


def test_point_to_point_transfers_of_a_job_ride_one_connection_per_pair_of_ranks():
    plat = platform(2, 4)
    g = Graph()
    nccl = {"connections": "persistent"}
    add_sendrecv(g, [0, 1], [4, 5], 1 << 20, platform=plat, chunks=2, job="j", nccl=nccl)
    add_sendrecv(g, [0, 2], [4, 6], 1 << 20, platform=plat, job="j", nccl=nccl)
    add_sendrecv(g, [0], [4], 1 << 20, platform=plat, job="k", nccl=nccl)
    src, dst, qp = g.column("src"), g.column("dst"), g.column("qp")
    data = g.column("compute") == 0
    k = np.flatnonzero(data)
    first = {(int(src[i]), int(dst[i])): int(qp[i]) for i in k[:4]}
    assert len(first) == 2 and len(set(first.values())) == 2          # two pairs, two pieces each
    assert qp[k[4]] == first[(0, 4)] and qp[k[5]] not in first.values()
    assert qp[k[6]] not in first.values()                              # job k: its own


def test_by_default_every_flow_is_its_own_queue_pair():
    sim = Simulation(platform())
    sim.add_collective("allreduce", "nccl_ring", "all", 8 * MIB)
    sim.add_collective("alltoall", "direct", "all", 8 * MIB)
    assert (sim.flow_column("qp") == -1).all()
    assert "flow_hash" not in sim.core_inputs()[0]


@pytest.mark.parametrize("model", ["dlrm", "transformer", "resnet50"])
def test_a_workloads_iterations_ride_the_same_connections(model):
    """Every iteration of a workload's job reuses its communicators' connections: the queue
    pairs between each pair of hosts are the same in iteration 0 and 1."""
    raw = {"topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 4,
                        "host_link": {"rate": "100Gbps", "delay": "1us"}},
           "nccl": {"connections": "persistent", "qps_per_connection": 2},
           "traffic": [{"kind": "workload", "model": model, "ranks": "all", "iterations": 2}]}
    sim = scenario.build(raw, ".").sim
    it = sim.flow_column("iteration")
    data = sim.flow_column("compute") == 0
    first, second = (labels_by_pair(sim, np.flatnonzero(data & (it == k))) for k in (0, 1))
    assert first and first == second
    assert all(min(q) >= 0 for q in first.values())
