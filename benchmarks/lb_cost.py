"""Cost of a switch's load-balancing choice per link crossing, on the k=8 fat-tree permutation.

    python benchmarks/lb_cost.py [ROUNDS] [OTHER_TREE ...]

Runs the benchmark case of benchmarks/test_speed.py (128 hosts, 2 MB flows, PFC, one part)
under each scheme of CASES, interleaved round by round in fresh processes (the machine is
shared and noisy), and prints link crossings per CPU-second for each, their medians and
each scheme's CPU per crossing over ECMP's (issue 31: per-packet adaptive routing at most
15% more per crossing).  "adaptive per packet, same paths" is that figure: every packet
runs adaptive routing's comparison of its ports' queues, whose levels are set out of reach
so that it sends the packets where ECMP does (the same crossings); plain per-packet
adaptive routing reorders, and its NACK storms multiply the crossings and change what a
crossing costs (packets held in buffers, go-back-N at the NICs).  Every case has a 1 ms retransmission timeout: a scheme that
reorders packets into go-back-N receivers makes NACK storms, whose resent packets are
crossings too (counted, and each run's bytes sent again printed), and a NACK that the
receiver's nack_interval holds back would otherwise leave a flow waiting for good.  Any
OTHER_TREE (a source tree with the core built in place, e.g. the commit before the
schemes) runs ECMP in the same rounds as a baseline.
"""
import json
import os
import statistics
import sys

import interleaved
from interleaved import child

HERE = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.dirname(HERE)

CASES = {"ecmp": {"scheme": "ecmp"},
         # every packet compares its equal-cost ports' queues, which never reach the first
         # level, so the hash breaks the tie exactly as ECMP would: the same packets on the
         # same paths, and the cost of choosing alone
         "adaptive per packet, same paths": {"scheme": "adaptive", "gap": "0us", "level_1": "1GB",
                                             "level_2": "1GB", "level_3": "1GB"},
         "adaptive per packet": {"scheme": "adaptive", "gap": "0us"},
         "adaptive per flowlet (10 us)": {"scheme": "adaptive", "gap": "10us"}}

CHILD = """
import json, sys
import numpy as np
from rocesim import Simulation, topology, traffic
t = topology.fat_tree(8, "100Gbps", "1us")
lb = json.loads(sys.argv[1])
kw = dict(switch={"load_balancing": lb}) if lb else dict()
sim = Simulation(t, seed=1, nic={"rto": "1ms"}, partition="none", **kw)
sim.add_flows(traffic.permutation(t.n_hosts, 2_000_000, 0, np.random.default_rng(1)))
s = sim.run(progress=False).summary
print(json.dumps(dict(crossings=s["link_crossings"], cpu_s=s["cpu_s"], events=s["events"],
                      retx=s["retx_bytes"], done=s["flows_completed"] == s["flows_total"])))
"""


def run(what):
    tree, lb = what
    return child(tree, CHILD, json.dumps(lb))


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    cases = [(f"ecmp {t}", t, None) for t in sys.argv[2:]] + [(name, TREE, lb) for name, lb in CASES.items()]
    rates = interleaved.rates([(name, (tree, lb)) for name, tree, lb in cases], rounds, run,
                              lambda s: f"{s['crossings']} crossings, {s['events']} events, {s['retx']} B sent "
                                        f"again" + ("" if s["done"] else ", NOT all flows done"))
    ecmp = statistics.median(rates["ecmp"])
    for name, v in rates.items():
        print(f"{name:>28}: median {statistics.median(v) / 1e6:.3f}  best {max(v) / 1e6:.3f} M crossings/CPU-s, "
              f"CPU per crossing {100 * (ecmp / statistics.median(v) - 1):+.1f}% over ecmp")


if __name__ == "__main__":
    main()
