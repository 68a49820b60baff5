"""Iteration time under each congestion-control scheme, in Khan et al.'s setting (HotI 2022).

    python plots/khan2022.py                  # both workloads x 7 configurations, 2 at a time

Scenarios `scenarios/khan2022/*.yaml`: 128 hosts on a 2:1 oversubscribed leaf-spine
(8 x 16 hosts, 8 spines, 200G), a data-parallel all-reduce-heavy workload (ResNet-50,
ring all-reduce, topology-aware: consecutive ranks share a leaf) and an
all-to-all-heavy one (DLRM).  Configurations: PFC alone (`none`) and every scheme.
Writes `OUT/<workload>/<scheme>/` per run (resumable, rocesim.sweep), `OUT/<workload>.png`
(iteration and collective times side by side) and `OUT/summary.md`.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from rocesim.sweep import SCHEME_VARIANTS, Job, run_sweep

HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIOS = os.path.join(os.path.dirname(HERE), "scenarios", "khan2022")
SCHEMES = SCHEME_VARIANTS


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", nargs="+", default=["allreduce_dp", "alltoall_dlrm"])
    p.add_argument("--schemes", nargs="+", default=list(SCHEMES), choices=list(SCHEMES))
    p.add_argument("--out", default="out/khan2022")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--set", action="append", default=[], help="extra override for every run")
    args = p.parse_args(argv)
    jobs = [Job(f"{w}/{s}", os.path.join(SCENARIOS, f"{w}.yaml"), tuple(SCHEMES[s] + args.set),
                os.path.join(args.out, w, s)) for w in args.workloads for s in args.schemes]
    summaries = run_sweep(jobs, args.jobs)
    from rocesim.results.plot import plot_training
    from rocesim.results import read_csv
    md = ["# Iteration time by congestion control (Khan et al. setting)", ""]
    for w in args.workloads:
        runs = []
        md += [f"### {w}", "", "| configuration | iteration time (ms), mean | per iteration | "
               "collective time (us) p50 / p99 | PFC pauses | run (s) |", "|---|---|---|---|---|---|"]
        for s in args.schemes:
            d = os.path.join(args.out, w, s)
            its, coll = read_csv(os.path.join(d, "iterations.csv")), read_csv(os.path.join(d, "collectives.csv"))
            runs.append((s, its, coll))
            sm = summaries[f"{w}/{s}"]
            cd = coll["duration_ns"] / 1e3
            md.append(f"| {s} | {np.nanmean(its['duration_ns']) / 1e6:.3f} | "
                      f"{', '.join(f'{x / 1e6:.3f}' for x in its['duration_ns'])} | "
                      f"{np.nanpercentile(cd, 50):.0f} / {np.nanpercentile(cd, 99):.0f} | {sm['pfc_pauses']} | "
                      f"{sm.get('run_wall_s', sm['wall_s'])} |")
        md.append("")
        plot_training(runs, os.path.join(args.out, f"{w}.png"), title=f"{w}: 128 hosts, 2:1 leaf-spine, 200G")
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    sys.exit(main())
