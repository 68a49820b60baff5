"""Parallel-core benchmarks (pytest-benchmark, issue 20): a run in parts on 1 and 2 threads.

    pytest benchmarks/test_parallel.py                                  # full size
    ROCESIM_BENCH_QUICK=1 pytest benchmarks/ --benchmark-disable        # CI smoke: tiny

Each case runs in a fresh interpreter and records in `extra_info` the run's wall and CPU
seconds (`Simulation.run`, the core and the Python between its slices, not the build),
its peak RSS, its parts and its link crossings: the k=16 fat-tree permutation (1 MB per
host, no CC), the HPCC fork's 320-host WebSearch run (30% load, 2 ms, DCQCN) and
scenarios/platforms/gpt_1024.yaml (packet level), in one part (`partition: none`, the
engine as before) and at `pods` and `leaves` on 1 and 2 threads.  The speed-up of 2
threads is wall(1 thread) / wall(2 threads) at the same partition; the results are the
same for any thread count (tests/core/test_threads.py), so no figure here depends on it
but time.  Wall time needs an otherwise idle machine: the README's Speed section says
how its figures were taken.  No test asserts a speed.
"""
import os

import pytest

from test_scale import QUICK, run_child

HERE = os.path.dirname(os.path.abspath(__file__))
GPT_1024 = os.path.join(HERE, "..", "scenarios", "platforms", "gpt_1024.yaml")

CASES = {
    "k16_permutation_1MB": f"""
t = topology.fat_tree({4 if QUICK else 16}, "100Gbps", "1us")
sim = Simulation(t, seed=1, partition=PARTITION)
sim.add_flows(traffic.permutation(t.n_hosts, {100_000 if QUICK else 1_000_000}, 0, np.random.default_rng(1)))
""",
    "hpcc320_websearch_30pct_2ms_dcqcn": f"""
t = topology.hpcc_320()
sim = Simulation(t, seed=1, cc="dcqcn", partition=PARTITION)
sim.add_flows(traffic.poisson_cdf(t.n_hosts, 100e9, 0.3, {50 * 10**6 if QUICK else 2 * 10**9}, traffic.WEBSEARCH,
                                  np.random.default_rng(1)))
""",
    "gpt_1024": f"""
from rocesim import scenario
quick = {["topology.servers=16", "topology.servers_per_pod=4", "stop=100us"] if QUICK else []!r}
sim = scenario.load({GPT_1024!r}, ["mode=packet", f"partition={{PARTITION}}", *quick]).sim
""",
}
RUN = """
res = sim.run(progress=False, threads=THREADS)
s = res.summary
out = dict(wall_s=s["wall_s"], run_cpu_s=s["cpu_s"], parts=s["parts"], crossings=s["link_crossings"],
           flows=s["flows_total"], completed=s["flows_completed"], stopped=s["stopped_at_limit"])
"""


# (one part runs on one thread)
RUNS = [("none", 1), ("pods", 1), ("pods", 2), ("leaves", 1), ("leaves", 2)]


@pytest.mark.parametrize("partition,threads", RUNS)
@pytest.mark.parametrize("case", CASES)
def test_parallel_run(benchmark, case, partition, threads):
    info = run_child(benchmark, f"PARTITION = {partition!r}\nTHREADS = {threads}\n" + CASES[case] + RUN)
    benchmark.extra_info.update(threads=threads, partition=partition)
    assert info["completed"] == info["flows"] or info["stopped"]
