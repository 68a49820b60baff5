"""Fingerprints of every shipped scenario's outputs, to show that a change of the core left
them byte-identical (issue 20: the parallel core keeps `partition: none` identical to the
single-threaded engine; docs/parallel_core.md, section 5).

Every `scenarios/**/*.yaml` runs in packet mode (`rocesim run --mode packet`), cut short
by `--set stop=...` (the caps below: the whole script takes a few CPU-minutes), one run at
a time.  The script prints, per scenario, its exit status and the SHA-256 of each file the
run wrote (figures excepted); summary.json is hashed without the keys the machine decides
(`wall_s`, `cpu_s`, `link_crossings_per_cpu_s`, and the threads a run used: `threads_mean`,
`threads_final`), which differ between reruns and thread counts.

    python validation/identity.py > branch.txt               # this tree
    python validation/identity.py --tree /work/main > main.txt
    diff main.txt branch.txt                                 # empty: identical outputs

`--set KEY=VALUE` and `--threads N` go to every run: `--set partition=leaves --threads 4`
against `--set partition=leaves --threads 1` shows that threads change nothing
(tests/core/test_parallel_identity.py does that on every scenario).

`--tree DIR` runs the rocesim of another checkout (built in place) on that checkout's
scenarios, through PYTHONPATH, with this interpreter.  It is a script and not a test with
stored hashes, because CSV bytes may change with the numpy version: compare two trees in
one environment, not against old hashes.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
DEFAULT_STOP = "200us"
# simulated-time caps (the default elsewhere), chosen so that each run takes at most a
# few CPU-seconds in the core on the 2-core development machine while its interesting part
# (data on the wire, pauses, deadlocks, faults, collectives) has begun; "at": when the
# first data flow starts (flow mode)
STOPS = {
    "quickstart": "1ms",
    "python_scheme": "100us",
    "training_background": "300us",
    "gallery/training16": "1300us",          # the first data flows start at 1 ms
    "hpcc_paper/fbhadoop50": "300us",
    "hpcc_paper/fbhadoop50_incast": "300us",
    "hpcc_paper/websearch30": "300us",
    "hpcc_paper/websearch30_incast": "300us",
    "khan2022/allreduce_dp": "9300us",       # at 9.08 ms
    "khan2022/alltoall_dlrm": "1300us",      # at 1 ms
    "pathologies/congestion_spreading": "500us",
    "pathologies/pfc_storm": "2ms",
    "pathologies/ring_cbd": "2ms",
    "pathologies/ring_third_flow": "2ms",
    "pathologies/routing_loop": "1ms",
    "pathologies/stale_route_clos": "3ms",
    "pathologies/triangle": "3ms",
    "pathologies/victim_flow": "1ms",
    "platforms/gpt_1024": "2600us",          # at 2.28 ms
    "platforms/llama3_70b_1024": "62ms",     # at 60.99 ms (10 ms: compute only, no packet)
    "platforms/rail16x8_allreduce": "700us",  # at 0.47 ms
    "platforms/simai_gpt13b": "252700us",    # at 252.53 ms (compute before)
}
# packet mode does not fit in the development machine's memory (24 GB): refused by the
# memory limit, or killed while built
SKIP = {"platforms/llama3_405b_16k": "packet mode needs more memory than 24 GB (killed)",
        "platforms/simai_moe_9216": "packet mode needs about 40 GB (refused: memory_limit)"}
# (rocesim.results.run.MACHINE_KEYS; repeated, not imported: --tree runs another checkout)
MACHINE_KEYS = ("wall_s", "cpu_s", "link_crossings_per_cpu_s", "threads_mean", "threads_final")
FIGURES = (".png", ".svg", ".pdf")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fingerprint(folder: Path) -> list[tuple[str, str]]:
    """(file name, SHA-256) of every output in `folder`, by name; summary.json without the
    keys the machine decides."""
    out = []
    for f in sorted(folder.iterdir()):
        if f.is_dir() or f.suffix in FIGURES:
            continue
        data = f.read_bytes()
        if f.name == "summary.json":
            summary = json.loads(data)
            for k in MACHINE_KEYS:
                summary.pop(k, None)
            data = json.dumps(summary, sort_keys=True).encode()
        out.append((f.name, _sha(data)))
    return out


def scenarios(tree: Path) -> list[tuple[str, Path]]:
    """(name, path) of every shipped scenario: its path under scenarios/ without .yaml."""
    root = tree / "scenarios"
    return [(str(p.relative_to(root).with_suffix("")), p) for p in sorted(root.rglob("*.yaml"))]


def run_one(path: Path, stop: str, out: Path, env: dict, cwd: str, extra=(), launcher=("-m", "rocesim")) -> int:
    """`rocesim run` of scenario `path` in packet mode to `stop`, into `out`, with `extra`
    command-line arguments (`--set partition=leaves`, `--threads 2`); its exit status.
    `launcher`: the interpreter's arguments before the command line (`-c CODE` that ends
    in `rocesim.cli.main`, for a test that sets the core up first)."""
    cmd = [sys.executable, *launcher, "run", str(path), "-o", str(out), "--mode", "packet",
           "--set", f"stop={stop}", "--no-plot", "--force", "-q", *extra]
    # output to pipes, not /dev/null: main at a215a8c segfaults on llama3_70b_1024 with its
    # stdout on /dev/null (and not on a pipe or a file)
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True).returncode


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="only these scenarios (names as printed)")
    ap.add_argument("--all", action="store_true", help="also the scenarios in SKIP")
    ap.add_argument("--tree", type=Path, default=HERE, help="the rocesim checkout to run (default: this one)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a setting for every run (e.g. partition=leaves)")
    ap.add_argument("--threads", help="threads for every run (a run in parts)")
    args = ap.parse_args(argv)
    extra = [a for kv in args.set for a in ("--set", kv)] + (["--threads", args.threads] if args.threads else [])
    tree = args.tree.resolve()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")])))
    with tempfile.TemporaryDirectory(prefix="rocesim-identity-") as tmp:
        # run from an empty folder, so that the current directory does not shadow `tree`
        where = subprocess.run([sys.executable, "-c", "import rocesim; print(rocesim.__file__)"],
                               env=env, cwd=tmp, capture_output=True, text=True).stdout.strip()
        print(f"# rocesim from {where}", file=sys.stderr)
        for name, path in scenarios(tree):
            if args.names and name not in args.names:
                continue
            if name in SKIP and not (args.all or name in args.names):
                print(f"{name}  skipped: {SKIP[name]}")
                continue
            stop = STOPS.get(name, DEFAULT_STOP)
            out = Path(tmp) / name.replace("/", "__")
            c0 = time.perf_counter()
            status = run_one(path, stop, out, env, tmp, extra)
            print(f"# {name}: {time.perf_counter() - c0:.1f} s", file=sys.stderr)
            summary = out / "summary.json"
            counts = json.loads(summary.read_text()) if summary.is_file() else {}
            print(f"{name}  stop={stop}  exit={status}  events={counts.get('events')}  "
                  f"link_crossings={counts.get('link_crossings')}")
            if out.is_dir():
                for fname, digest in fingerprint(out):
                    print(f"  {fname:24s} {digest}")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
