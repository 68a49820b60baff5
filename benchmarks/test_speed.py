"""Speed benchmarks (pytest-benchmark): packet link crossings per CPU-second.

    pytest benchmarks/                          # full size, timed
    ROCESIM_BENCH_QUICK=1 pytest benchmarks/ --benchmark-disable   # CI smoke: tiny, once

Each benchmark records, in `extra_info`, the link crossings (a packet, data or
control, crossing one link), the CPU seconds of the run and their ratio.  The 320-host
run also records the peak resident memory of a fresh process running it.  The README's
Speed section reports these figures; no test asserts a speed.  The runs are in one part
(`partition: none`, PARTITION): these figures are the engine's, comparable across versions;
benchmarks/test_parallel.py measures runs in parts and on threads.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from rocesim import Simulation, topology, traffic
from rocesim.cc import builtin_schemes

QUICK = bool(os.environ.get("ROCESIM_BENCH_QUICK"))
PARTITION = "none"                   # the engine in one part (the default is `leaves`)


def record(benchmark, res):
    s = res.summary
    benchmark.extra_info.update(
        link_crossings=s["link_crossings"], events=s["events"], cpu_s=s["cpu_s"],
        crossings_per_cpu_s=s["link_crossings_per_cpu_s"], flows=s["flows_total"])
    assert s["flows_completed"] == s["flows_total"] or s["stopped_at_limit"]


def fat_tree_permutation(k=8, size=2_000_000):
    t = topology.fat_tree(k, "100Gbps", "1us")
    sim = Simulation(t, seed=1, partition=PARTITION)
    sim.add_flows(traffic.permutation(t.n_hosts, size, 0, np.random.default_rng(1)))
    return sim


def incast(n=8, size=10_000_000):
    sim = Simulation(topology.star(n + 1, "100Gbps", "1us"), partition=PARTITION)
    for h in range(1, n + 1):
        sim.add_flow(h, 0, size)
    return sim


def hpcc320_websearch(duration_ps=2 * 10**9, cc="none"):
    t = topology.hpcc_320()
    sim = Simulation(t, seed=1, cc=cc, partition=PARTITION)
    sim.add_flows(traffic.poisson_cdf(t.n_hosts, 100e9, 0.3, duration_ps, traffic.WEBSEARCH,
                                      np.random.default_rng(1)))
    return sim


def run_once(benchmark, build):
    # the build is part of setup, not of the measured run
    res = benchmark.pedantic(lambda sim: sim.run(progress=False), setup=lambda: ((build(),), {}),
                             rounds=1 if QUICK else 3, iterations=1)
    record(benchmark, res)
    return res


def test_fat_tree_k8_permutation_2MB(benchmark):
    res = run_once(benchmark, lambda: fat_tree_permutation(4 if QUICK else 8, 200_000 if QUICK else 2_000_000))
    assert res.summary["drops"] == 0


def test_incast_8_to_1(benchmark):
    run_once(benchmark, lambda: incast(8, 500_000 if QUICK else 10_000_000))


@pytest.mark.parametrize("cc", list(builtin_schemes()))
def test_hpcc320_websearch_30pct_2ms(benchmark, cc):
    res = run_once(benchmark, lambda: hpcc320_websearch(50 * 10**6 if QUICK else 2 * 10**9, cc))
    assert res.summary["drops"] == 0


_MEMORY_CHILD = """
import json, resource, sys
sys.path.insert(0, {bench_dir!r})
from test_speed import hpcc320_websearch
res = hpcc320_websearch({duration})
res = res.run(progress=False)
print(json.dumps(dict(maxrss_kb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      crossings=res.summary["link_crossings"], cpu_s=res.summary["cpu_s"])))
"""


def test_hpcc320_peak_memory(benchmark):
    """Peak RSS of a fresh interpreter running the 320-host WebSearch run (in `extra_info`)."""
    code = _MEMORY_CHILD.format(bench_dir=os.path.dirname(__file__),
                                duration=50 * 10**6 if QUICK else 2 * 10**9)
    # run from the benchmarks folder, so that `rocesim` is the package the tests import
    out = benchmark.pedantic(lambda: subprocess.run([sys.executable, "-c", code], check=True,
                                                    capture_output=True, text=True,
                                                    cwd=os.path.dirname(__file__)).stdout,
                             rounds=1, iterations=1)
    info = json.loads(out.strip().splitlines()[-1])
    benchmark.extra_info.update(peak_rss_mb=round(info["maxrss_kb"] / 1024, 1),
                                link_crossings=info["crossings"], cpu_s=info["cpu_s"])
    assert info["maxrss_kb"] > 0
