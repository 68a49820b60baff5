"""Benchmarks run round by round, each case in a fresh process, interleaved (the machine is
shared and noisy: a slow spell then costs every case alike); used by deadlock_cost.py and
lb_cost.py."""
import json
import os
import subprocess
import sys


def child(tree, code, *args) -> dict:
    """Run `code` (a Python program printing one JSON line last) with the rocesim of source
    tree `tree`, and return what it printed."""
    out = subprocess.run([sys.executable, "-c", code, *args], check=True, capture_output=True,
                         text=True, cwd=tree, env=dict(os.environ, PYTHONPATH=tree)).stdout
    return json.loads(out.strip().splitlines()[-1])


def rates(cases, rounds, run, describe) -> dict:
    """{name: link crossings per CPU-second of each round} of `cases` [(name, what)], each
    measured by `run(what)` (a dict with `crossings` and `cpu_s`) once per round, in order;
    each run printed with `describe(result)`."""
    out = {name: [] for name, _ in cases}
    width = max(len(name) for name, _ in cases)
    for r in range(rounds):
        for name, what in cases:
            s = run(what)
            out[name].append(s["crossings"] / s["cpu_s"])
            print(f"round {r} {name:>{width}}: {describe(s)}, {s['cpu_s']:.3f} CPU s, "
                  f"{s['crossings'] / s['cpu_s'] / 1e6:.3f} M/CPU-s", flush=True)
    return out
