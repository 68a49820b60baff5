"""rocesim against the HPCC ns-3 fork, side by side, on the fork's own inputs.

Every case under `validation/reference/<case>/` holds what the fork was run on and what
it wrote: `case.yaml` (the topology and flow files, and per scheme the fork's FCT file,
its CPU seconds and the command that produced it; see `reference/README.md`).  This
script runs rocesim on the same topology and flows with each scheme, set up as the
fork's run.py sets it (32 MiB buffers, the fork's 36 B data headers and 48 B ACKs), and
prints, per case and scheme, the FCT slowdown at p50/p95/p99 over all flows and per
size bin (equal flow counts, as the HPCC paper bins them), both sides, their ratio, and
the CPU time of each side.

    python validation/compare.py                    # every case, every scheme
    python validation/compare.py incast8 -s timely  # one case, one scheme
    python validation/compare.py -o validation/RESULTS.md

CI does not run it (the fat-tree cases take minutes); the README links its latest table.
Slowdown is FCT over the FCT the flow would have alone, each side by its own definition
(the fork's `standalone_fct`, rocesim's exact `ideal_fct`).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from rocesim import scenario  # noqa: E402
from rocesim.results.metrics import PERCENTILES  # noqa: E402

# rocesim's setting of each of the fork's run.py schemes (`--cc`)
SCHEMES = {
    "dcqcn": {"scheme": "dcqcn"},
    "dcqcn_win": {"scheme": "dcqcn", "params": {"window": "bdp"}},
    "hpcc": {"scheme": "hpcc"},
    "timely": {"scheme": "timely"},
    "dctcp": {"scheme": "dctcp"},
}
# what the fork's config and wire format are, where rocesim's defaults differ
FORK_SETUP = {"switch": {"buffer": "32MiB"}, "nic": {"header": "36B", "ack_size": "48B"}}


def read_fork_fct(path):
    """The fork's FCT file: (size_bytes, fct_ns, slowdown) arrays.

    One line per finished flow, as the fork's `scratch/third.cc` writes it: source and
    destination IP (hex), source and destination port, size (B), start (ns), FCT (ns),
    standalone FCT (ns: base RTT plus the bytes with headers at the path's bottleneck rate).
    """
    rows = np.loadtxt(path, dtype=np.float64, ndmin=2, usecols=(4, 6, 7))
    size, fct, ideal = rows[:, 0], rows[:, 1], rows[:, 2]
    return size, fct, fct / ideal


def run_rocesim(case_dir, case, name):
    raw = {"seed": 1, "topology": {"kind": "hpcc_file", "path": case["topology"]},
           "traffic": [{"kind": "hpcc_flow_file", "path": case["flows"]}],
           "cc": SCHEMES[name], **FORK_SETUP}
    scn = scenario.build(raw, base_dir=case_dir)
    t0 = time.process_time()
    res = scn.sim.run(progress=False)
    cpu = time.process_time() - t0
    f = res.flows
    done = ~np.isnan(f["fct_ns"])
    return f["size_bytes"][done], f["fct_ns"][done], f["slowdown"][done], cpu, int(done.sum()), f["size_bytes"].size


def percentiles(slowdown):
    return np.percentile(slowdown, PERCENTILES) if slowdown.size else np.full(len(PERCENTILES), np.nan)


def bin_edges(sizes, n_bins):
    """Upper size edges of `n_bins` bins of equal flow count (of the reference's flows)."""
    qs = np.quantile(np.sort(sizes), np.linspace(0, 1, n_bins + 1)[1:])
    return np.unique(qs)


def rows_for(ref, ours, n_bins):
    """[(label, ref percentiles, our percentiles)] for all flows and each size bin."""
    rows = [("all", percentiles(ref[2]), percentiles(ours[2]))]
    lo = -1
    for hi in bin_edges(ref[0], n_bins):
        sel_r = (ref[0] > lo) & (ref[0] <= hi)
        sel_o = (ours[0] > lo) & (ours[0] <= hi)
        rows.append((f"<= {_size(hi)}", percentiles(ref[2][sel_r]), percentiles(ours[2][sel_o])))
        lo = hi
    return rows


def _size(b):
    for unit, k in (("MB", 1e6), ("KB", 1e3)):
        if b >= k:
            return f"{b / k:.3g}{unit}"
    return f"{int(b)}B"


def compare_case(case_name, schemes, n_bins):
    case_dir = os.path.join(HERE, "reference", case_name)
    with open(os.path.join(case_dir, "case.yaml")) as fh:
        case = yaml.safe_load(fh)
    out = [f"### {case_name}", "", case.get("description", "").strip(), ""]
    out.append("| scheme | flows | CPU s fork / rocesim | flows by size | p50 fork / rocesim | "
               "p95 fork / rocesim | p99 fork / rocesim | worst ratio |")
    out.append("|---|---|---|---|---|---|---|---|")
    for name, ref_info in case["schemes"].items():
        if schemes and name not in schemes:
            continue
        ref = read_fork_fct(os.path.join(case_dir, ref_info["fct"]))
        size, fct, sd, cpu, done, total = run_rocesim(case_dir, case, name)
        for label, r, o in rows_for(ref, (size, fct, sd), n_bins):
            ratio = np.nanmax(np.abs(o / r - 1)) if np.all(r > 0) else np.nan
            cells = " | ".join(f"{a:.2f} / {b:.2f}" for a, b in zip(r, o))
            head = (f"{name} | {ref[0].size} / {done} of {total} | {ref_info.get('cpu_s', float('nan')):.1f} / {cpu:.1f}"
                    if label == "all" else " | | ")
            out.append(f"| {head} | {label} | {cells} | {ratio * 100:.0f}% |")
        print(f"{case_name}/{name} done", file=sys.stderr)
    return "\n".join(out) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("cases", nargs="*", help="case folders under validation/reference (default: all)")
    p.add_argument("-s", "--scheme", action="append", help="only these schemes (repeatable)")
    p.add_argument("--bins", type=int, default=4, help="size bins of equal flow count (default 4)")
    p.add_argument("-o", "--output", help="also write the tables to this Markdown file")
    args = p.parse_args(argv)
    ref_root = os.path.join(HERE, "reference")
    cases = args.cases or sorted(d for d in os.listdir(ref_root)
                                 if os.path.isfile(os.path.join(ref_root, d, "case.yaml")))
    text = "\n".join(compare_case(c, args.scheme, args.bins) for c in cases)
    print(text)
    if args.output:
        with open(args.output, "w") as fh:
            fh.write("# rocesim against the HPCC ns-3 fork\n\nGenerated by `python validation/compare.py "
                     f"-o {args.output}`; FCT slowdown percentiles, fork / rocesim; 'worst ratio' is the "
                     "largest relative difference in the row.\n\n" + text)


if __name__ == "__main__":
    main()
