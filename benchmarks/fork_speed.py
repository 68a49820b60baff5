"""rocesim against the HPCC ns-3 fork in CPU and wall time, alternated in one sitting (issue 33).

    python benchmarks/fork_speed.py --fork FORK/simulation/build/scratch/third
                                    [--case websearch30] [-s dcqcn -s hpcc ...] [--rounds 1] [-o out.json]

For each of the fork's schemes on one of validation/reference's cases (its stored config,
topology and flows), round by round: the fork's optimized build, then rocesim on 1 thread,
then rocesim on 2 threads (the default partition, `leaves`), each as a process of its own,
measured from outside: user + system CPU seconds and wall seconds of the whole process
(rocesim's include starting Python, importing, building the scenario and writing nothing;
the fork's its start-up and its own output).  rocesim is set up as validation/compare.py
sets it for the fork's run (the fork's frames, buffers and serialization), and every flow
must finish on both sides.  Prints per scheme the medians and two ratios: the fork's CPU
over rocesim's on one thread, and the fork's wall over rocesim's on two threads (the fork
runs on one).  The wall ratio means something on an otherwise idle machine only: the
figures carry the machine's 1-minute load average when each run started.
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "validation"))

import yaml  # noqa: E402

from compare import SCHEMES, run_fork, timed_run  # noqa: E402
from flow_vs_packet import git_commit, machine  # noqa: E402

# one rocesim run of a case and scheme in a process of its own; prints flows done and in all
_ROCESIM = """
import json, sys
sys.path.insert(0, {validation!r})
import yaml
from compare import run_rocesim
case = yaml.safe_load(open({case_yaml!r}))
run = run_rocesim({case_dir!r}, case, {name!r}, 1, "auto", {threads})
print(json.dumps({{"done": run[4], "total": run[5]}}))
"""


def run_rocesim_process(case_dir, name, threads):
    """rocesim on a case and the fork's scheme `name`, in a fresh process: (CPU s, wall s)."""
    code = _ROCESIM.format(validation=os.path.join(ROOT, "validation"), case_yaml=os.path.join(case_dir, "case.yaml"),
                           case_dir=case_dir, name=name, threads=threads)
    done, cpu, wall = timed_run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"rocesim exited {done.returncode} on {name}: {done.stderr[-800:]}")
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    if counts["done"] != counts["total"]:
        raise RuntimeError(f"rocesim finished {counts['done']} of {counts['total']} flows of {name}")
    return cpu, wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fork", required=True, help="the HPCC fork's binary (its build/scratch/third)")
    ap.add_argument("--case", default="websearch30", help="a case under validation/reference (default websearch30)")
    ap.add_argument("-s", "--scheme", action="append", help="only these schemes (repeatable; default: all the case's)")
    ap.add_argument("--rounds", type=int, default=1, help="rounds of fork, 1 thread, 2 threads per scheme")
    ap.add_argument("-o", "--output", help="also write every run's figures and the medians to this JSON file")
    a = ap.parse_args()
    if not os.access(a.fork, os.X_OK):
        ap.error(f"--fork {a.fork}: not an executable file")
    case_dir = os.path.join(ROOT, "validation", "reference", a.case)
    if not os.path.isfile(os.path.join(case_dir, "case.yaml")):
        ap.error(f"--case {a.case}: no case.yaml under validation/reference/{a.case}")
    with open(os.path.join(case_dir, "case.yaml")) as fh:
        case = yaml.safe_load(fh)
    names = [n for n in case["schemes"] if n in SCHEMES and (not a.scheme or n in a.scheme)]
    if not names:
        ap.error(f"--scheme: none of {a.scheme} among the case's schemes ({', '.join(case['schemes'])})")
    sitting = {"machine": machine(), "commit": git_commit(), "date": time.strftime("%Y-%m-%d"),
               "case": a.case, "runs": []}
    for r in range(a.rounds):
        for name in names:
            for side, threads in (("fork", 1), ("rocesim", 1), ("rocesim", 2)):
                load = os.getloadavg()[0]
                if side == "fork":
                    _, cpu, wall = run_fork(a.fork, case_dir, case, case["schemes"][name])
                else:
                    cpu, wall = run_rocesim_process(case_dir, name, threads)
                sitting["runs"].append({"round": r, "scheme": name, "side": side, "threads": threads,
                                        "cpu_s": cpu, "wall_s": wall, "load": load})
                print(f"round {r} {name} {side} {threads} thread(s): CPU {cpu:.2f} s, wall {wall:.2f} s, "
                      f"load {load:.2f}", flush=True)
    print(f"\n{a.case}, {sitting['machine']}, {sitting['date']}, {sitting['commit']}; medians over {a.rounds} round(s)\n")
    print("| scheme | fork CPU s | rocesim 1 thread CPU s | CPU fork / rocesim | fork wall s "
          "| rocesim 2 threads wall s | wall fork / rocesim |")
    print("|---|---|---|---|---|---|---|")
    sitting["medians"] = {}
    for name in names:
        def med(side, threads, key):
            return statistics.median(x[key] for x in sitting["runs"]
                                     if x["scheme"] == name and x["side"] == side and x["threads"] == threads)
        m = {"fork_cpu_s": med("fork", 1, "cpu_s"), "fork_wall_s": med("fork", 1, "wall_s"),
             "rocesim_1_cpu_s": med("rocesim", 1, "cpu_s"), "rocesim_1_wall_s": med("rocesim", 1, "wall_s"),
             "rocesim_2_cpu_s": med("rocesim", 2, "cpu_s"), "rocesim_2_wall_s": med("rocesim", 2, "wall_s")}
        sitting["medians"][name] = m
        print(f"| {name} | {m['fork_cpu_s']:.1f} | {m['rocesim_1_cpu_s']:.2f} | "
              f"{m['fork_cpu_s'] / m['rocesim_1_cpu_s']:.0f}x | {m['fork_wall_s']:.1f} | "
              f"{m['rocesim_2_wall_s']:.2f} | {m['fork_wall_s'] / m['rocesim_2_wall_s']:.0f}x |")
    if a.output:
        with open(a.output, "w") as fh:
            json.dump(sitting, fh, indent=1)


if __name__ == "__main__":
    main()
