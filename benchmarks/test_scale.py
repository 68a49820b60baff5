"""Scale benchmarks (pytest-benchmark): what training-cluster sizes cost.

    pytest benchmarks/test_scale.py                                  # full size
    ROCESIM_BENCH_QUICK=1 pytest benchmarks/ --benchmark-disable     # CI smoke: tiny

Each case runs in a fresh interpreter (so that its peak resident memory is its own)
and records CPU seconds and peak RSS in `extra_info`.  Targets (issue 10):

* building the `Simulation` of a k=32 fat tree (8192 hosts): < 10 s CPU, < 1.5 GB;
"""
import json
import os
import subprocess
import sys

import rocesim

QUICK = bool(os.environ.get("ROCESIM_BENCH_QUICK"))
HERE = os.path.dirname(os.path.abspath(__file__))
# the child imports the rocesim this process imported (a checkout built in place, or installed)
CHILD_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [os.path.dirname(os.path.dirname(os.path.abspath(rocesim.__file__)))]
    + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}

_PRELUDE = """
import json, resource, time
import numpy as np
from rocesim import Simulation, topology, traffic
cpu0 = time.process_time()
"""

_REPORT = """
print(json.dumps(dict(cpu_s=time.process_time() - cpu0,
                      peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, **out)))
"""


def run_child(benchmark, body: str) -> dict:
    """Run `body` (which fills a dict `out`) in a fresh interpreter; record its figures."""
    code = _PRELUDE + body + _REPORT
    run = lambda: subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                 text=True, cwd=HERE, env=CHILD_ENV).stdout
    info = json.loads(benchmark.pedantic(run, rounds=1, iterations=1).strip().splitlines()[-1])
    benchmark.extra_info.update({k: round(v, 3) if isinstance(v, float) else v for k, v in info.items()})
    return info


def test_build_fat_tree_k32(benchmark):
    """Building the Simulation (topology, ports, routing tables, PFC/ECN arrays)."""
    k = 8 if QUICK else 32
    info = run_child(benchmark, f"""
t = topology.fat_tree({k}, "100Gbps", "1us")
sim = Simulation(t, seed=1)
out = dict(hosts=t.n_hosts, route_entries=int(sim._network["route_ports"].size))
""")
    assert info["hosts"] == k ** 3 // 4
