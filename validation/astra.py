"""rocesim on ASTRA-sim 2.0's own examples, side by side with ASTRA-sim's analytical backend
(congestion-aware): prints validation/ASTRA.md's table.

    python validation/astra.py                 # every row (a few CPU-minutes)
    python validation/astra.py --quick         # the 1 MiB and 64 MiB rows
    python validation/astra.py --write-inputs DIR   # only write the input files to DIR

The inputs are what ASTRA-sim's examples hold, written here (nothing of ASTRA-sim is
shipped): its microbenchmark traces as its generator scripts
(examples/workload/microbenchmarks/generator_scripts/*.py) write them, one COMM_COLL_NODE
per NPU (id = the NPU, `is_cpu_op` false, `comm_type`, `comm_size` = N MB of 2^20 bytes,
GlobalMetadata version 0.0.4: byte for byte the shipped 8npus_1MB files), its network
files HGX-H100-validated.yml (one Switch of 8 NPUs, 400 GB/s, 936.25 ns) and Ring_8npus.yml
(a Ring of 8, 50 GB/s, 500 ns), and its system files HGX-H100-validated.json and
Ring_4chunks.json (their values, below).  rocesim runs each as the scenario
``{topology: {kind: astra_sim, path: NET}, traffic: [{kind: workload, model: {chakra:
TRACE}, system: SYSTEM}]}`` with 9000-byte payloads and no congestion control (ASTRA-sim
models neither packets nor a scheme), and the table compares its collective's time with
ASTRA-sim's in validation/reference/astra/results.csv (README.md there says how they were
made).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

import chakra_writer as w                       # noqa: E402  (the tests' Chakra encoder)
from rocesim import scenario as sc              # noqa: E402

MiB = 1 << 20
REFERENCE = os.path.join(HERE, "reference", "astra", "results.csv")
COMM_TYPES = {"all_reduce": w.ALL_REDUCE, "reduce_scatter": w.REDUCE_SCATTER, "all_gather": w.ALL_GATHER,
              "all_to_all": w.ALL_TO_ALL}
NETWORKS = {   # examples/network/analytical/<name>.yml
    "HGX-H100-validated": "topology: [ Switch ]\nnpus_count: [ 8 ]\nbandwidth: [ 400.0 ]  # GB/s\n"
                          "latency: [ 936.25 ]  # ns\n",
    "Ring_8npus": "topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 50.0 ]  # GB/s\nlatency: [ 500.0 ]  # ns\n",
}
_RING = {f"{op}-implementation": ["ring"] for op in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")}
SYSTEMS = {    # examples/system/native_collectives/<name>.json
    "HGX-H100-validated": {"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 2,
                           "preferred-dataset-splits": 4, **_RING, "collective-optimization": "localBWAware",
                           "local-mem-bw": 3350, "boost-mode": 0},
    "Ring_4chunks": {"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
                     "preferred-dataset-splits": 4, **_RING, "collective-optimization": "localBWAware",
                     "local-mem-bw": 1600, "boost-mode": 0, "roofline-enabled": 0, "peak-perf": 900},
}
PAYLOAD = "9000B"


def write_inputs(folder: str, rows) -> None:
    """The network and system files, and a trace per (collective, size) of `rows`."""
    for name, text in NETWORKS.items():
        with open(os.path.join(folder, f"{name}.yml"), "w") as f:
            f.write(text)
    for name, values in SYSTEMS.items():
        with open(os.path.join(folder, f"{name}.json"), "w") as f:
            json.dump(values, f, indent=4)
    for op, mib in sorted({(r["collective"], int(r["size_mib"])) for r in rows}):
        d = os.path.join(folder, op, f"8npus_{mib}MB")
        os.makedirs(d, exist_ok=True)
        for npu in range(8):
            node = w.node(npu, w.COLL, name=f"{op}_8npus_{mib}MB",
                          attrs={"is_cpu_op": False, "comm_type": COMM_TYPES[op], "comm_size": mib * MiB})
            with open(os.path.join(d, f"{op}.{npu}.et"), "wb") as f:
                f.write(w.stream([w.f_bytes(1, b"0.0.4"), node]))


def run_rocesim(folder: str, row) -> tuple[float, float]:
    """rocesim's time of the collective of `row` (us) and the CPU seconds it took."""
    op, mib = row["collective"], int(row["size_mib"])
    raw = {"topology": {"kind": "astra_sim", "path": f"{row['network']}.yml"}, "nic": {"payload": PAYLOAD},
           "cc": {"scheme": "none"},
           "traffic": [{"kind": "workload", "model": {"chakra": f"{op}/8npus_{mib}MB/{op}"},
                        "system": f"{row['system']}.json"}]}
    cpu = time.process_time()
    res = sc.build(raw, folder).sim.run()
    return float(res.collectives["duration_ns"][0]) / 1000, time.process_time() - cpu


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only the 1 MiB and 64 MiB rows")
    ap.add_argument("--write-inputs", metavar="DIR", help="write the input files to DIR and stop")
    args = ap.parse_args(argv)
    with open(REFERENCE) as f:
        rows = list(csv.DictReader(f))
    if args.quick:
        rows = [r for r in rows if int(r["size_mib"]) <= 64]
    if args.write_inputs:
        os.makedirs(args.write_inputs, exist_ok=True)
        write_inputs(args.write_inputs, rows)
        return
    print("| network | system | collective | size (MiB) | ASTRA-sim (us) | rocesim (us) | rocesim / ASTRA-sim "
          "| rocesim CPU s |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        write_inputs(folder, rows)
        for row in rows:
            astra_us = int(row["astra_sim_ns"]) / 1000
            us, cpu = run_rocesim(folder, row)
            print(f"| {row['network']} | {row['system']} | {row['collective']} | {row['size_mib']} | "
                  f"{astra_us:,.1f} | {us:,.1f} | {us / astra_us:.3f} | {cpu:.1f} |", flush=True)


if __name__ == "__main__":
    main()
