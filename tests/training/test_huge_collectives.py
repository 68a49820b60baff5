"""Collectives of any size built at the packet level without a Python loop per NCCL loop or
per slice: a ring's full loops copied once built (`Graph.repeat`), a transfer's pieces
timed by their distinct sizes, NVLS's rings cut into `max_transfers` slices together."""
import numpy as np
import pytest

from rocesim import Simulation
from rocesim.network import platform as pf
from rocesim.network.platform import ScaleUp
from rocesim.network.topology import star
from rocesim.training import collectives
from rocesim.training.algorithms import nccl_ring
from rocesim.training.chunks import split_bytes, split_bytes_each
from rocesim.training.graph import COLUMNS, Graph


def _rail(nvls=False):
    return pf.rail_optimized(3, 4, "100Gbps", "1us", ScaleUp(900 * 10**9, 10**5, nvls=nvls), nics_per_server=2)


def _graph(platform, op, ranks, size, nccl):
    g = Graph()
    rec = collectives.append_collective(g, op, "nccl_ring", ranks, size, platform=platform, nccl=nccl, job="j")
    return g, rec


@pytest.mark.parametrize("platform, ranks", [(None, [0, 1]), (None, [0, 1, 2, 3, 4]), ("rail", [0, 1, 5, 6, 9, 10]),
                                             ("rail", list(range(12)))], ids=["2hosts", "5hosts", "6gpus", "12gpus"])
@pytest.mark.parametrize("op", ["allreduce", "reducescatter", "allgather"])
@pytest.mark.parametrize("nccl", [{}, {"qps_per_connection": 2, "connections": "persistent"},
                                  {"qps_per_connection": 3, "qp_spread": "round_robin", "connections": "persistent"},
                                  {"min_message": "40KB", "channels": 3}],
                         ids=["default", "split", "round_robin", "min_message"])
def test_a_rings_loops_copied_are_the_loops_built_one_by_one(platform, ranks, op, nccl, monkeypatch):
    """The same nodes, columns, edges (in order) and record as loop by loop, on hosts and
    GPUs, queue pairs split or in turn (whose rotation repeats after several loops), with
    a partial last loop."""
    platform = _rail() if platform == "rail" else None
    nccl = {"buffer": "64KiB", **nccl}
    size = 24 * 10**6 + 7                            # tens of loops of 32 KiB chunks, the last partial
    copied = _graph(platform, op, ranks, size, nccl)
    monkeypatch.setattr(nccl_ring, "STEADY_LOOP", 10**9)                 # no loop copied
    built = _graph(platform, op, ranks, size, nccl)
    (g, rec), (h, ref) = copied, built
    assert g.n == h.n > 0
    for name in COLUMNS:
        assert np.array_equal(g.column(name), h.column(name)), name
    assert all(np.array_equal(a, b) for a, b in zip(g.edges(), h.edges())) and g.n_edges == h.n_edges
    for name in ("start_nodes", "done_nodes", "flows"):
        assert np.array_equal(getattr(rec, name), getattr(ref, name))


def _count_calls(monkeypatch, owner, name):
    calls = []
    real = getattr(owner, name)
    monkeypatch.setattr(owner, name, lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


def test_a_ring_of_thousands_of_loops_builds_a_few_at_the_packet_level(monkeypatch):
    """A plain 9000TB all-reduce on 8 hosts took minutes to check at the packet level, one
    NCCL loop at a time (its 125,000 steps); at most the slices' cap (`max_transfers`) is
    built, in a few loops' steps whatever the size."""
    calls = _count_calls(monkeypatch, nccl_ring, "split_bytes_each")
    sim = Simulation(star(8, "100Gbps", "1us"), nccl={"max_transfers": 100_000})
    sim.add_collective("allreduce", "nccl_ring", size="9000TB")
    steps = 14                                           # 2 (p - 1)
    assert 50_000 < sim.n_nodes <= 100_000 + 64 and len(calls) <= 2 * 5 * steps


def test_a_transfers_pieces_are_timed_by_their_distinct_sizes(monkeypatch):
    """NCCL's tree cuts a huge all-reduce into thousands of chunks: the scale-up hops of its
    chains were timed piece by piece (900,000 calls for 9000TB on 16 x 8 GPUs)."""
    calls = _count_calls(monkeypatch, ScaleUp, "port_time_ps")
    sim = Simulation(pf.rail_optimized(2, 4, "400Gbps", "1us", ScaleUp(3600 * 10**9, 10**6)),
                     nccl={"max_transfers": 50_000})
    sim.add_collective("allreduce", "nccl_tree", size="9000TB")
    assert sim.n_nodes > 40_000 and len(calls) <= 2 * 2 * 8 * 8      # a send: at most two distinct sizes


def test_nvls_rings_are_cut_into_max_transfers_slices_together():
    """NVLS runs a ring per piece and rail across servers: each was cut into `max_transfers`
    slices (128 million nodes refused after a minute for 9000TB on 16 x 8 GPUs); together
    they are, as one ring is."""
    sim = Simulation(_rail(nvls=True), nccl={"max_transfers": 64_000})
    sim.add_collective("allreduce", "nccl_nvls", size="9000TB")
    assert 10_000 < sim.n_nodes <= 2 * 64_000 + 10_000


@pytest.mark.parametrize("total, parts", [(9 * 10**15, 1101), (10**18, 4096), (2**62 + 12345, 999_983), (10, 4)])
def test_sizes_are_split_without_overflow(total, parts):
    """floor(total x i / parts) overflowed int64 for 9000TB cut into a thousand parts (an
    ASTRA-sim ring's streams): negative parts, a collective refused as 'more blocks than
    it has bytes'."""
    got = split_bytes(total, parts)
    reference = [total * (i + 1) // parts - total * i // parts for i in range(parts)]
    assert got.tolist() == reference
    assert (split_bytes_each(np.array([total, 7]), parts)[:, 0] == got).all()
    if parts == 1101:                                  # the ring's streams: 9000TB in 1101
        sim = Simulation(star(2, "100Gbps", "1us"))
        sim.add_collective("allreduce", "astra_ring", size=total, chunks=parts)
        assert sim.n_nodes >= parts * 2
