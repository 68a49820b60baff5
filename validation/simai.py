"""rocesim against SimAI 1.6 (its ns-3 packet backend and its analytical backend), side by
side, on SimAI's own input files.

`validation/reference/simai/` holds what SimAI was run on and what it reported: the
topology its generator wrote for 64 H100s (8 servers, 400G NICs, NVLink 2880 Gbps,
rail-optimized Spectrum-X), the one-collective workload files and AICB's GPT-13B workload
(TP 8, DP 8), SimAI.conf, and `results.json` (each figure with the output file and line it
was read from); `reference/simai/RUNS.md` says how each was made (commits, the build, the
patch SimAI's ns-3 backend needs, the commands).  This script runs rocesim on the same
files, set up as SimAI's run was: the SimAI topology file (`kind: simai_file`), the
workload read by rocesim's SimAI reader under SimAI's dependency rules, SimAI.conf's
network settings as `rocesim simai-conf` maps them (9000 B payload, DCQCN with SimAI's
parameters, ECN thresholds per rate, 32 MiB switch buffers) and SimAI's per-flow send latency (`AS_SEND_LAT=0`: `nccl.step_latency: 0us`), a new queue
pair per flow as SimAI's front end opens (`nccl.connections: per_flow`); collectives
run as NCCL runs them (rocesim's default, `algorithm: auto`).

    python validation/simai.py                       # every case (GPT-13B: about a minute of CPU)
    python validation/simai.py tp8_allreduce_20MiB   # one case
    python validation/simai.py -o validation/SIMAI.md

For a collective it prints the duration of rank 0's group (SimAI reports rank 0's view:
its EndToEnd.csv row `coll`); for GPT-13B the iteration.  SimAI's analytical backend reads
its -nv/-nic bandwidths as GiB/s where it says GB/s: the `analytical` column is the run
given the real rates in GiB/s (360 GB/s and 50 GB/s as 335.28 and 46.57).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REF = os.path.join(HERE, "reference", "simai")
sys.path.insert(0, os.path.dirname(HERE))

from rocesim import scenario  # noqa: E402
from rocesim.scenario.simai_conf import read_simai_conf  # noqa: E402

# case -> (workload file under reference/simai/runs/, what SimAI reports)
CASES = {
    "tp8_allreduce_20MiB": "TP all-reduce 20 MiB (8 GPUs of a server)",
    "tp8_allgather_3.25GB": "TP all-gather 3.25 GB",
    "tp8_alltoall_96MiB": "TP all-to-all 96 MiB",
    "dp8x8rails_reducescatter_650MB": "DP reduce-scatter 650 MB on 8 rails",
    "dp8x8rails_reducescatter_6.5GB": "DP reduce-scatter 6.5 GB on 8 rails",
    "all64_alltoall_96MiB": "64-GPU all-to-all 96 MiB",
    "all64_allreduce_1GiB": "64-GPU all-reduce 1 GiB",
    "gpt13b": "GPT-13B iteration (AICB, TP 8, DP 8)",
}
WORKLOAD = {"gpt13b": "G13B-M1-C01_GPT13B_megatron_tp8_pp1_mbs1_A100_hdr64.txt"}


def scenario_for(case: str) -> dict:
    """The rocesim scenario of `case`, as SimAI's run was set up: SimAI.conf's network
    settings as `rocesim simai-conf` maps them, SimAI's topology and workload files."""
    workload = WORKLOAD.get(case, case + ".txt")
    network, _ignored = read_simai_conf(os.path.join(REF, "SimAI.conf"))
    return {
        "name": f"simai_{case}",
        "topology": {"kind": "simai_file", "path": os.path.join(REF, "topo", "Spectrum-X_64g_8gps_400Gbps_H100")},
        **network,
        # SimAI's ns-3 front end gives every flow a new source port (its SendFlow takes
        # portNumber[src][dst]++), so each flow draws its own ECMP path: per_flow
        "nccl": {"step_latency": "0us", "connections": "per_flow"},
        "traffic": [{"kind": "workload", "model": {"simai": os.path.join(REF, "runs", workload)}, "gpus": 64,
                     "dependencies": "simai"}],
    }


def run_case(case: str) -> dict:
    """rocesim's figure for `case` (us), its CPU seconds and the process's peak RSS so far."""
    cpu = time.process_time()
    sc = scenario.build(scenario_for(case), REF)
    res = sc.sim.run(progress=False, threads=1)      # CPU on one thread, as SimAI's `-t 1`
    if case == "gpt13b":
        us = float(res.iterations["duration_ns"][0]) / 1e3
    else:
        us = float(res.collectives["duration_ns"][0]) / 1e3      # rank 0's group: the first collective
    return dict(us=us, cpu_s=time.process_time() - cpu,
                rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                algorithm=",".join(sorted(set(res.collectives["algorithm"].tolist()))))


def reference(results: dict, case: str, backend: str) -> dict | None:
    """SimAI's figure for `case` on `backend` (ns3 with AS_SEND_LAT=0, or analytical given
    the real rates), or None when there is none."""
    key = {"ns3": f"{case}_lat0__ns3", "analytical": f"{case}__analytical_gib"}[backend]
    found = results.get(key)
    return found if found and "duration_us" in found else None


def run_apart(case: str) -> dict:
    """`run_case` in a fresh interpreter, so that the peak RSS is the case's own."""
    out = subprocess.run([sys.executable, __file__, "--one", case], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(results: dict, cases) -> str:
    rows = ["| case | SimAI ns-3 (us) | SimAI analytical (us) | rocesim (us) | rocesim / ns-3 | rocesim algorithm "
            "| CPU s: SimAI ns-3 / rocesim | peak MB: SimAI ns-3 / rocesim |",
            "|---|---|---|---|---|---|---|---|"]
    for case in cases:
        mine = run_apart(case)
        ns3 = reference(results, case, "ns3")
        ana = reference(results, case, "analytical")
        ratio = f"{mine['us'] / ns3['duration_us']:.4f}" if ns3 else "-"
        rows.append(f"| {CASES[case]} | {ns3['duration_us']:,.1f} | " if ns3 else f"| {CASES[case]} | - | ")
        rows[-1] += (f"{ana['duration_us']:,.0f} | " if ana else "- | ") + \
            f"{mine['us']:,.1f} | {ratio} | {mine['algorithm']} | " + \
            (f"{ns3['cpu_s']:,.0f} / " if ns3 else "- / ") + f"{mine['cpu_s']:,.1f} | " + \
            (f"{ns3['peak_rss_mb']:,.0f} / " if ns3 else "- / ") + f"{mine['rss_mb']:,.0f} |"
        print(rows[-1], flush=True)
    return "\n".join(rows)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*", help=f"cases (default: all): {', '.join(CASES)}")
    ap.add_argument("-o", "--output", help="write the table as Markdown here")
    ap.add_argument("--one", help=argparse.SUPPRESS)          # a child run: print one case's figures as JSON
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(run_case(args.one)))
        return
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        ap.error(f"unknown case {unknown[0]!r}; cases: {', '.join(CASES)}")
    with open(os.path.join(REF, "results.json")) as f:
        results = json.load(f)
    text = table(results, args.cases or list(CASES))
    if args.output:
        with open(args.output, "w") as f:
            f.write("# rocesim against SimAI 1.6\n\nGenerated by `python validation/simai.py -o "
                    f"{args.output}` (reference figures: validation/reference/simai/RUNS.md).\n\n{text}\n")


if __name__ == "__main__":
    main()
