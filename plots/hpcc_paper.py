"""The HPCC paper's headline experiment for every scheme: run, plot and tabulate.

    python plots/hpcc_paper.py                       # all 4 scenarios x 6 schemes, 2 at a time
    python plots/hpcc_paper.py --scenarios websearch30 --schemes hpcc dcqcn --jobs 1

Scenarios are `scenarios/hpcc_paper/*.yaml` (the 320-host fat tree with WebSearch at 30%
or FB_Hadoop at 50% load, each with and without the 60 x 500 KB incasts).  Every run
writes its own folder `OUT/<scenario>/<scheme>/` (rocesim.sweep: an interrupted sweep
keeps, and later skips, what it finished).  Then, per
scenario, `OUT/<scenario>.png` plots p50/p95/p99 FCT slowdown of the background flows
(the cdf traffic, not the incasts) against flow size in 20 equal-count bins, all schemes
on one figure, and `OUT/summary.md` holds the table.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from rocesim.sweep import SCHEME_VARIANTS, Job, run_sweep

HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIOS = os.path.join(os.path.dirname(HERE), "scenarios", "hpcc_paper")

# the fork's comparison: every scheme (PFC alone is not one of the paper's lines)
SCHEMES = {k: v for k, v in SCHEME_VARIANTS.items() if k != "pfc-only"}
SIZE_GROUPS = {"short (<=50KB)": (0, 50_000), "medium": (50_000, 1_000_000), "long (>1MB)": (1_000_000, np.inf)}


def background_flows(outdir):
    """Flows of the cdf traffic entry (tag 0) with their size and slowdown."""
    from rocesim.results import read_flows_csv
    f = read_flows_csv(os.path.join(outdir, "flows.csv"))
    keep = f["tag"] == 0
    return {k: v[keep] for k, v in f.items()}


def table(name, runs, out_root):
    rows = [f"### {name}", "",
            "| scheme | run (s) | flows done | " + " | ".join(f"{g} p50 / p95 / p99" for g in SIZE_GROUPS) + " |",
            "|---|---|---|" + "---|" * len(SIZE_GROUPS)]
    for label, summary in runs:
        f = background_flows(os.path.join(out_root, name, label))
        cells = []
        for lo, hi in SIZE_GROUPS.values():
            sd = f["slowdown"][(f["size_bytes"] > lo) & (f["size_bytes"] <= hi)]
            sd = sd[~np.isnan(sd)]
            cells.append(" / ".join(f"{v:.2f}" for v in np.percentile(sd, [50, 95, 99])) if sd.size else "-")
        rows.append(f"| {label} | {summary.get('run_wall_s', summary['wall_s'])} | "
                    f"{summary['flows_completed']}/{summary['flows_total']} | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenarios", nargs="+", default=["websearch30", "websearch30_incast",
                                                      "fbhadoop50", "fbhadoop50_incast"])
    p.add_argument("--schemes", nargs="+", default=list(SCHEMES), choices=list(SCHEMES))
    p.add_argument("--out", default="out/hpcc_paper")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--set", action="append", default=[], help="extra override for every run, e.g. "
                   "traffic[0].duration=2ms")
    args = p.parse_args(argv)
    jobs = [Job(f"{n}/{s}", os.path.join(SCENARIOS, f"{n}.yaml"), tuple(SCHEMES[s] + args.set),
                os.path.join(args.out, n, s)) for n in args.scenarios for s in args.schemes]
    summaries = run_sweep(jobs, args.jobs)
    done = {(n, s): summaries[f"{n}/{s}"] for n in args.scenarios for s in args.schemes}
    from rocesim.results.plot import plot_slowdown
    md = ["# HPCC paper experiment: FCT slowdown of the background flows", ""]
    for name in args.scenarios:
        runs = [(s, done[(name, s)]) for s in args.schemes]
        plot_slowdown([(s, background_flows(os.path.join(args.out, name, s))) for s, _ in runs],
                      os.path.join(args.out, f"{name}.png"), title=f"{name}: FCT slowdown, 320-host fat tree")
        md.append(table(name, runs, args.out))
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    sys.exit(main())
