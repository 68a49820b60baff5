"""Wall time of a run in parts on 1 and 2 threads, alternated between source trees (issue 33).

    python benchmarks/threads_compare.py [--case simai_gpt13b] [--rounds 2]
                                         [--runs leaves:1,leaves:2,pods:1,pods:2] [TREE ...]

Runs one of benchmarks/test_parallel.py's cases (the same program, each run in a fresh
process) at each partition:threads of `--runs`, with the rocesim of each TREE (a source tree
with its core built in place; this checkout when none is given), round by round, so that a
slow spell of a shared machine costs every tree alike.  Prints each run's wall and CPU
seconds of `Simulation.run`, the threads it used and the machine's 1-minute load average
when it started, then per tree the median wall time of each run and the speed-up of 2
threads over 1 at each partition: the ratio of the medians, and the ratios of each round's
pair of runs (their range and median: on a machine whose speed drifts between rounds, the
pairs drift least).  Its figures mean something on an otherwise idle machine.
"""
import argparse
import os
import statistics

from interleaved import child
from test_parallel import CASES, body
from test_scale import _PRELUDE, _REPORT

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs="*", default=[os.path.dirname(HERE)])
    ap.add_argument("--case", default="simai_gpt13b", choices=sorted(CASES))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--runs", default="leaves:1,leaves:2,pods:1,pods:2",
                    help="comma-separated partition:threads (threads: a number or auto)")
    a = ap.parse_args()
    runs = [(p, t if t == "auto" else int(t)) for p, t in (r.split(":") for r in a.runs.split(","))]
    walls = {(tree, run): [] for tree in a.trees for run in runs}
    for r in range(a.rounds):
        for tree in a.trees:
            for part, threads in runs:
                s = child(tree, _PRELUDE + body(a.case, part, threads) + _REPORT)
                walls[tree, (part, threads)].append(s["wall_s"])
                print(f"round {r} {tree} {part}:{threads}: wall {s['wall_s']:.2f} s, CPU {s['run_cpu_s']:.2f} s, "
                      f"threads {s['threads_mean']:.2f}, load {s['load']:.2f}", flush=True)
    for tree in a.trees:
        med = {run: statistics.median(walls[tree, run]) for run in runs}
        print(f"{tree}: " + ", ".join(f"{p}:{t} {w:.2f} s" for (p, t), w in med.items()))
        for part in dict.fromkeys(p for p, _ in runs):
            if (part, 1) in med and (part, 2) in med:
                # each round's two runs ran one after the other: their ratio is the one a
                # machine whose speed drifts (a shared host) moves least
                pairs = [w1 / w2 for w1, w2 in zip(walls[tree, (part, 1)], walls[tree, (part, 2)])]
                print(f"  {part}: 2 threads over 1: {med[part, 1] / med[part, 2]:.2f}x (medians); round by "
                      f"round {min(pairs):.2f}-{max(pairs):.2f}x, median {statistics.median(pairs):.2f}x")


if __name__ == "__main__":
    main()
