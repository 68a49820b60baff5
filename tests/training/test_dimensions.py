"""Multi-dimensional all-reduce (rocesim.training.algorithms.dimensional): fixed order, Themis balancing.

And the scale-up port that carries one send at a time."""
import numpy as np
import pytest

from rocesim import ScenarioError, Simulation
from rocesim.network import platform as pf
from rocesim.network.platform import ScaleUp
from rocesim.training.algorithms.dimensional import chunk_orders

MIB = 1024 * 1024


def platform(scale_up_gbps, servers=4, **kw):
    return pf.rail_optimized(servers, 8, "400Gbps", "1us", ScaleUp(scale_up_gbps * 10**9, 10**6), **kw)


def allreduce(p, algorithm, m=16 * MIB, chunks=1, ranks="all"):
    sim = Simulation(p)
    sim.add_collective("allreduce", algorithm, ranks, m, chunks=chunks)
    res = sim.run(progress=False)
    assert res.summary["flows_completed"] == res.summary["flows_total"]
    return res.collectives["duration_ns"][0] * 1e-9


def test_one_chunk_in_the_fixed_order_is_the_hierarchical_all_reduce():
    p = platform(3600)
    t = allreduce(p, "hierarchical")
    assert allreduce(p, "dimensional") == t
    assert allreduce(p, "themis") == t            # one chunk: nothing to balance, the fixed order


def test_themis_orders_alternate_between_alike_dimensions():
    assert chunk_orders([8, 8], [400e9, 400e9], [MIB] * 4, "themis") == [(0, 1), (1, 0), (0, 1), (1, 0)]
    assert chunk_orders([8, 8], [400e9, 400e9], [MIB] * 3, "dimensional") == [(0, 1)] * 3
    # a much faster first dimension takes the largest stage of every chunk
    assert chunk_orders([8, 4], [3600e9, 100e9], [MIB] * 4, "themis") == [(0, 1)] * 4


def test_a_gpu_scale_up_port_sends_one_chunk_at_a_time():
    """Pipelined chunks must not overlap on a GPU's scale-up port: the all-reduce moves
    2 (G-1)/G m per GPU over the scale-up domain, so it takes at least that over R."""
    R, G, m = 400e9, 8, 16 * MIB
    for algorithm in ("hierarchical", "dimensional"):
        assert allreduce(platform(400), algorithm, m, chunks=8) >= 2 * (G - 1) / G * m * 8 / R


def test_themis_balances_a_slow_scale_up_domain():
    """Scale-up no faster than the NIC: the fixed order loads the scale-up domain with the
    whole buffer, Themis sends some chunks across servers first.  Neither beats the
    busiest dimension's load under its own orders."""
    p, m, chunks = platform(400), 16 * MIB, 8
    fixed, themis = allreduce(p, "dimensional", m, chunks), allreduce(p, "themis", m, chunks)
    assert themis < 0.85 * fixed
    sizes, rates = [8, 4], [400e9, 400e9]
    for orders, took in ((chunk_orders(sizes, rates, [m // chunks] * chunks, "themis"), themis),
                         (chunk_orders(sizes, rates, [m // chunks] * chunks, "dimensional"), fixed)):
        load = np.zeros(2)
        for order in orders:
            left = m / chunks
            for d in order:
                load[d] += 2 * (sizes[d] - 1) / sizes[d] * left * 8 / rates[d]
                left /= sizes[d]
        assert took >= load.max()


def test_pods_are_a_third_dimension():
    p = platform(3600, servers=8, servers_per_pod=4)
    from rocesim.training.transfers import Transfers
    from rocesim.training.algorithms.dimensional import platform_dimensions
    from rocesim.training.graph import Graph
    t = Transfers(Graph(), np.arange(64), 1, 3, 0, -1, 0, p)
    dims = platform_dimensions(t)
    assert [(d.name, d.size, d.groups.shape[0]) for d in dims] == [
        ("gpu in server", 8, 8), ("server in pod", 4, 16), ("pod", 2, 32)]
    assert sorted(np.concatenate([g for g in dims[2].groups]).tolist()) == list(range(64))
    assert allreduce(p, "themis", 4 * MIB, chunks=4) > 0


def test_ranks_that_do_not_fill_a_grid_are_refused():
    with pytest.raises(ScenarioError, match="fill a grid"):
        allreduce(platform(3600), "themis", ranks=list(range(12)))
