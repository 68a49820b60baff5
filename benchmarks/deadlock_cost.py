"""Cost of the deadlock detector on the k=8 fat-tree permutation (2 MB flows, PFC).

    python benchmarks/deadlock_cost.py [ROUNDS] [OTHER_TREE ...]

Runs the benchmark case of benchmarks/test_speed.py with the detector off and on
(default interval 100 us, threshold 1 ms), interleaved round by round in fresh
processes (the machine is shared and noisy), and prints link crossings per CPU-second
for each.  Any OTHER_TREE (a source tree with the core built in place, e.g. the commit
before the detector) is measured in the same rounds as a baseline.
"""
import os
import statistics
import sys

import interleaved
from interleaved import child

HERE = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.dirname(HERE)

CHILD = """
import json, sys
import numpy as np
from rocesim import Simulation, topology, traffic
t = topology.fat_tree(8, "100Gbps", "1us")
kw = dict() if {mode!r} == "base" else dict(deadlock={mode!r} == "on")
sim = Simulation(t, seed=1, **kw)
sim.add_flows(traffic.permutation(t.n_hosts, 2_000_000, 0, np.random.default_rng(1)))
s = sim.run(progress=False).summary
print(json.dumps(dict(crossings=s["link_crossings"], cpu_s=s["cpu_s"], events=s["events"])))
"""


def run(what):
    tree, mode = what
    return child(tree, CHILD.format(mode=mode))


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    cases = [(f"base {t}", t, "base") for t in sys.argv[2:]] + [("off", TREE, "off"), ("on", TREE, "on")]
    rates = interleaved.rates([(name, (tree, mode)) for name, tree, mode in cases], rounds, run,
                              lambda s: f"{s['crossings']} crossings, {s['events']} events")
    for name, v in rates.items():
        print(f"{name:>24}: median {statistics.median(v) / 1e6:.3f}  best {max(v) / 1e6:.3f} M crossings/CPU-s")
    off, on = statistics.median(rates["off"]), statistics.median(rates["on"])
    print(f"detector on vs off (medians): {100 * (off - on) / off:+.2f}% cost")


if __name__ == "__main__":
    main()
