"""2 threads against 1 within one run, the thread count alternated every few windows (issue 33).

    python benchmarks/threads_interleaved.py [--case simai_gpt13b] [--partition leaves]
                                             [--counts 1,2] [--every N] [--runs 1] [TREE ...]

Runs one of benchmarks/test_parallel.py's cases as its `test_interleaved` does (each run a fresh process, with the
rocesim of each TREE: a source tree with its core built in place; this checkout when none
is given) with the core's thread count cycling through `--counts`, `--every` windows each
(debug.thread_schedule: the results do not change), and prints, per count, the wall
seconds and events of the windows run on it (debug.thread_rates: from the end of the window
before to the end of this one, barrier and closing step included; a change of count is
paid by the first window after it) and each count's events per wall second over the first
count's: its speed-up over the same stretch of the run.

Why: `threads_compare.py` times whole runs one after another, and on a machine whose speed
drifts by tens of percent within minutes (a shared VM host: docs/parallel_core.md, section
20) a pair of whole runs can differ by that much for no reason of its own. Here the counts
take turns every few milliseconds of wall time, so a drift costs them alike. The whole
run's wall time is printed too: it mixes the counts and compares with neither.
Its figures mean something on an otherwise idle machine.
"""
import argparse
import os
import statistics

from interleaved import child
from test_parallel import CASES, TURN_WINDOWS, interleaved_body
from test_scale import _PRELUDE, _REPORT

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs="*", default=[os.path.dirname(HERE)])
    ap.add_argument("--case", default="simai_gpt13b", choices=sorted(CASES))
    ap.add_argument("--partition", default="leaves", choices=("leaves", "pods"))
    ap.add_argument("--counts", default="1,2", help="comma-separated thread counts to cycle through")
    ap.add_argument("--every", type=int, help="windows on each count before the next (default: the case's "
                                              "TURN_WINDOWS in test_parallel.py)")
    ap.add_argument("--runs", type=int, default=1, help="runs per tree (alternated between the trees)")
    a = ap.parse_args()
    counts = [int(c) for c in a.counts.split(",")]
    a.every = TURN_WINDOWS[a.case] if a.every is None else a.every
    if len(counts) < 2 or min(counts) < 1 or a.every < 1 or a.runs < 1:
        ap.error("--counts: two or more counts of 1 or more; --every and --runs: 1 or more")
    code = _PRELUDE + interleaved_body(a.case, a.partition, counts, a.every) + _REPORT
    speedups = {tree: {k: [] for k in counts[1:]} for tree in a.trees}
    for r in range(a.runs):
        for tree in a.trees:
            s = child(tree, code)
            got = {int(k): v for k, v in s["counts"].items()}
            if any(k not in got for k in counts):
                print(f"run {r} {tree}: no window ran on {[k for k in counts if k not in got]} thread(s) "
                      f"(a smaller --every takes turns more often)", flush=True)
                continue
            per = ", ".join(f"{k} thread{'s' if k > 1 else ''}: {got[k][0]:.2f} s, {got[k][1] / 1e6:.1f} M events, "
                            f"{got[k][2]} windows, {got[k][1] / got[k][0] / 1e6:.2f} M/s" for k in counts)
            print(f"run {r} {tree}: whole run {s['wall_s']:.2f} s; {per}", flush=True)
            turns = min(got[k][2] for k in counts) // a.every
            if turns < 10:
                print(f"  (each count had about {turns} turn{'s' if turns != 1 else ''} of {a.every} windows: "
                      f"a smaller --every takes turns more often)", flush=True)
            for k in counts[1:]:
                speedups[tree][k].append(s["speedup"][str(k)])          # (the child's ratio of rates)
                print(f"  {k} threads over {counts[0]}: {s['speedup'][str(k)]:.2f}x", flush=True)
    if a.runs > 1:
        for tree in a.trees:
            for k, x in speedups[tree].items():
                if not x:
                    continue
                print(f"{tree}: {k} threads over {counts[0]}: {min(x):.2f}-{max(x):.2f}x, "
                      f"median {statistics.median(x):.2f}x")


if __name__ == "__main__":
    main()
