"""rocesim against the HPCC ns-3 fork, side by side, on the fork's own inputs.

Every case under `validation/reference/<case>/` holds what the fork was run on and what
it wrote: `case.yaml` (the topology and flow files, and per scheme the fork's FCT file,
its CPU seconds and the command that produced it; see `reference/README.md`).  This
script runs rocesim on the same topology and flows with each scheme, set up as the
fork's run.py sets it (32 MiB buffers, the fork's frames: 48 B of headers per data
packet (56 B under TIMELY), 60 B ACKs, and its serialization times in whole nanoseconds),
and prints, per case and scheme, the FCT slowdown at p50/p95/p99 over all
flows and per size bin (equal flow counts, as the HPCC paper bins them), both sides, their
ratio, and the CPU time of each side.

    python validation/compare.py                    # every case, every scheme
    python validation/compare.py incast8 -s timely  # one case, one scheme
    python validation/compare.py --seeds 3 -o validation/RESULTS.md
    python validation/compare.py --partition none   # rocesim in one part (default: auto)
    python validation/compare.py --fork FORK/simulation/build/scratch/third --seeds 3 -o validation/RESULTS.md
    python validation/compare.py --fork FORK/simulation/build/scratch/third --fork-scheme dcqcn --seeds 3

CPU seconds compare only when both were measured on one machine at one time: with `--fork`
(the fork's `scratch/third`, built as reference/README.md says; its libraries in the folder
above) the fork runs each case's stored config here, alternating with rocesim (per case and
scheme: the fork, then rocesim's seeds), its CPU is user + system seconds of its process, the
FCTs compared are the ones it writes now (the table says whether they are the stored ones),
and the table gives the CPU ratio.  `--fork-scheme` runs the fork only for the schemes named (a fork
run of a fat-tree case takes minutes): the others keep the stored FCTs and CPU.  Without it, the fork's CPU is case.yaml's `cpu_s`, marked
with where and when it was made (`cpu_made`), and no ratio is given.

CI does not run it (the fat-tree cases take minutes); the README links its latest table.
Slowdown is FCT over the FCT the flow would have alone, each side by its own definition
(the fork's `standalone_fct`, rocesim's exact `ideal_fct`).
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from flow_vs_packet import git_commit, machine  # noqa: E402
from rocesim import config, scenario  # noqa: E402
from rocesim.results.metrics import PERCENTILES  # noqa: E402

# rocesim's setting of each of the fork's run.py schemes (`--cc`)
SCHEMES = {
    "dcqcn": {"scheme": "dcqcn"},
    "dcqcn_win": {"scheme": "dcqcn", "params": {"window": "bdp"}},
    "hpcc": {"scheme": "hpcc"},
    "timely": {"scheme": "timely"},
    "dctcp": {"scheme": "dctcp"},
}
# what the fork's config and wire format are, where rocesim's defaults differ.  The fork's
# frames: its PPP header stands for Ethernet and is 14 B (its ppp-header.cc), so a data packet
# is payload + 48 B (14 + IPv4 20 + UDP 8 + its 6 B sequence header), an ACK 60 B (padded),
# and with INT (HPCC) the data packet carries 42 B more and the ACK echoes them (88 B):
# rocesim's defaults.  ns-3 counts time in whole nanoseconds and the fork converts each
# frame's serialization to it by truncation: `serialization: whole_ns`.
FORK_SETUP = {"switch": {"buffer": "32MiB"},
              "nic": {"header": "48B", "ack_size": "60B", "serialization": "whole_ns"}}
# per scheme, where the fork's wire format differs from FORK_SETUP: under TIMELY (CC mode 7)
# the fork's data packets carry its 8-byte send timestamp in the sequence header (48 + 8 B);
# its ACKs echo it and stay 60 B
SCHEME_NIC = {"timely": {"header": "56B"}}


def fork_setup(name):
    """rocesim's config keys for the fork's run.py scheme `name` (cc plus FORK_SETUP)."""
    nic = {**FORK_SETUP["nic"], **SCHEME_NIC.get(name, {})}
    return {"cc": SCHEMES[name], **FORK_SETUP, "nic": nic}


def read_fork_fct(path):
    """The fork's FCT file: (size_bytes, fct_ns, slowdown) arrays.

    One line per finished flow, as the fork's `scratch/third.cc` writes it: source and
    destination IP (hex), source and destination port, size (B), start (ns), FCT (ns),
    standalone FCT (ns: base RTT plus the bytes with headers at the path's bottleneck rate).
    """
    rows = np.loadtxt(path, dtype=np.float64, ndmin=2, usecols=(4, 6, 7))
    size, fct, ideal = rows[:, 0], rows[:, 1], rows[:, 2]
    return size, fct, fct / ideal


def _config_files(path) -> dict:
    """{key: value} of a fork config's lines that name files (`TOPOLOGY_FILE mix/x.txt`)."""
    with open(path) as fh:
        pairs = (line.split(None, 1) for line in fh if line.strip())
        return {k: v.strip() for k, v in pairs if k.endswith("_FILE")}


def timed_run(argv, **kwargs):
    """Run the process `argv` (subprocess.run's keywords): (its CompletedProcess, its user +
    system CPU seconds, its wall seconds), measured from outside."""
    before, w0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    done = subprocess.run(argv, **kwargs)
    wall = time.perf_counter() - w0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return done, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def run_fork(fork, case_dir, case, ref_info):
    """Run the fork binary `fork` on a case's stored config in a scratch folder laid out as
    the config names its files (the case's topology and flows; no node traced): (the FCT
    arrays it wrote, as `read_fork_fct`, its process's user + system CPU seconds, and its wall
    seconds)."""
    work = tempfile.mkdtemp(prefix="fork_")
    try:
        names = _config_files(os.path.join(case_dir, ref_info["config"]))
        for name in names.values():
            os.makedirs(os.path.dirname(os.path.join(work, name)), exist_ok=True)
        for key, src in (("TOPOLOGY_FILE", case["topology"]), ("FLOW_FILE", case["flows"])):
            shutil.copyfile(os.path.join(case_dir, src), os.path.join(work, names[key]))
        with open(os.path.join(work, names["TRACE_FILE"]), "w") as fh:
            fh.write("0\n")
        conf = os.path.join(work, "config.txt")
        shutil.copyfile(os.path.join(case_dir, ref_info["config"]), conf)
        libs = os.path.dirname(os.path.dirname(os.path.abspath(fork)))      # build/scratch/third: build/
        env = dict(os.environ, LD_LIBRARY_PATH=os.pathsep.join(filter(None, [libs, os.environ.get("LD_LIBRARY_PATH")])))
        done, cpu, wall = timed_run([os.path.abspath(fork), conf], cwd=work, env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"the fork exited {done.returncode} on {ref_info['config']}: {done.stderr[-500:]}")
        return read_fork_fct(os.path.join(work, names["FCT_OUTPUT_FILE"])), cpu, wall
    finally:
        shutil.rmtree(work, ignore_errors=True)


def same_fcts(a, b) -> bool:
    """Whether two FCT readings (`read_fork_fct`) hold the same flows, whatever their order."""
    rows = [np.array(sorted(zip(size, fct))) for size, fct, _ in (a, b)]
    return rows[0].shape == rows[1].shape and np.array_equal(rows[0], rows[1])


def run_rocesim(case_dir, case, name, seed=1, partition="auto", threads=1):
    """rocesim on a case with the fork's scheme `name`: (sizes, FCTs and slowdowns of the
    finished flows, CPU seconds of building and running, flows finished, flows in all, wall
    seconds of building and running)."""
    raw = {"seed": seed, "topology": {"kind": "hpcc_file", "path": case["topology"]},
           "traffic": [{"kind": "hpcc_flow_file", "path": case["flows"]}],
           "partition": partition, **fork_setup(name)}
    t0, w0 = time.process_time(), time.perf_counter()   # building and running, as the fork's process does both
    scn = scenario.build(raw, base_dir=case_dir)
    res = scn.sim.run(progress=False, threads=threads)
    cpu, wall = time.process_time() - t0, time.perf_counter() - w0
    f = res.flows
    done = ~np.isnan(f["fct_ns"])
    return (f["size_bytes"][done], f["fct_ns"][done], f["slowdown"][done], cpu, int(done.sum()), f["size_bytes"].size,
            wall)


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


def seed_rows(ref, runs, n_bins):
    """rows_for over several rocesim runs (seeds): [(label, ref, median, spread)], where
    spread is the largest (max - min) / median over the row's percentiles: how far the
    seeds alone (ECMP hashing, RED draws) move rocesim's figure."""
    per_run = [rows_for(ref, run, n_bins) for run in runs]
    out = []
    for i, (label, r, _) in enumerate(per_run[0]):
        ours = np.array([rows[i][2] for rows in per_run])
        med = np.median(ours, axis=0)
        spread = np.nanmax((ours.max(axis=0) - ours.min(axis=0)) / med) if np.all(med > 0) else np.nan
        out.append((label, r, med, spread))
    return out


def _size(b):
    for unit, k in (("MB", 1e6), ("KB", 1e3)):
        if b >= k:
            return f"{b / k:.3g}{unit}"
    return f"{int(b)}B"


FORK_SHOWN = "FORK/simulation/build/scratch/third"    # how a command written out names --fork's binary
STORED = "\\*"     # marks the fork's stored CPU figure (Markdown: a literal asterisk)


def cpu_cell(fork_cpu, cpu) -> str:
    """The CPU cell: the fork's seconds measured here beside rocesim's and their ratio, or
    (`fork_cpu` None) only rocesim's: the stored figure is shown apart (`stored_cpu_cell`)."""
    pair = f"{_secs(fork_cpu)} / {_secs(cpu)}"
    return f"{pair} ({fork_cpu / cpu:.0f}x)" if cpu > 0 else pair


def stored_cpu_cell(ref_info, cpu) -> str:
    return f"{ref_info.get('cpu_s', float('nan')):.2f}{STORED} / {_secs(cpu)}"


def _secs(s) -> str:
    return f"{s:.2f}" if s >= 1 else f"{s:.3f}"


def compare_case(case_name, schemes, n_bins, n_seeds=1, summary=None, partition="auto", threads=1, fork=None,
                 fork_schemes=None):
    """The Markdown table of one case; appends (case, scheme, all-flow ratios at each
    percentile, worst ratio over the size bins, seed spread, the fork's CPU over rocesim's or
    None) to `summary` if given.  With `fork` (the fork's binary) the fork runs the case
    first, then rocesim, scheme by scheme (`run_fork`; only the schemes in `fork_schemes`
    if given); else its CPU is the stored figure."""
    case_dir = os.path.join(HERE, "reference", case_name)
    with open(os.path.join(case_dir, "case.yaml")) as fh:
        case = yaml.safe_load(fh)
    out = [f"### {case_name}", "", case.get("description", "").strip(), ""]
    spread_head, spread_rule = (" seed spread |", "---|") if n_seeds > 1 else ("", "")
    cpu_head = "CPU s fork / rocesim (ratio)" if fork else "CPU s fork / rocesim"
    out.append(f"| scheme | flows | {cpu_head} | flows by size | p50 fork / rocesim | "
               f"p95 fork / rocesim | p99 fork / rocesim | worst ratio |{spread_head}")
    out.append(f"|---|---|---|---|---|---|---|---|{spread_rule}")
    notes, ran, stored = [], [], []
    for name, ref_info in case["schemes"].items():
        if schemes and name not in schemes:
            continue
        ref = read_fork_fct(os.path.join(case_dir, ref_info["fct"]))
        fork_cpu = None
        here = fork is not None and (not fork_schemes or name in fork_schemes)
        (ran if here else stored).append(name)
        if here:
            fresh, fork_cpu, _ = run_fork(fork, case_dir, case, ref_info)
            if not same_fcts(fresh, ref):
                notes.append(f"{name}: the fork's FCTs here differ from the stored ones "
                             f"({fresh[0].size} flows against {ref[0].size}); compared with the ones made here")
            ref = fresh
        runs = [run_rocesim(case_dir, case, name, seed, partition, threads) for seed in range(1, n_seeds + 1)]
        _, _, _, cpu, done, total, _ = runs[0]
        cpu_text = cpu_cell(fork_cpu, cpu) if here else stored_cpu_cell(ref_info, cpu)
        worst_bin, worst_spread = 0.0, 0.0
        for label, r, o, spread in seed_rows(ref, [run[:3] for run in runs], n_bins):
            ratio = np.nanmax(np.abs(o / r - 1)) if np.all(r > 0) else np.nan
            if label == "all":
                all_ratios = o / r - 1
            else:
                worst_bin = np.nanmax([worst_bin, ratio])
            worst_spread = np.nanmax([worst_spread, spread])
            cells = " | ".join(f"{a:.2f} / {b:.2f}" for a, b in zip(r, o))
            head = f"{name} | {ref[0].size} / {done} of {total} | {cpu_text}" if label == "all" else " | | "
            tail = f" {spread * 100:.0f}% |" if n_seeds > 1 else ""
            out.append(f"| {head} | {label} | {cells} | {ratio * 100:.0f}% |{tail}")
        if summary is not None:
            summary.append((case_name, name, all_ratios, worst_bin, worst_spread,
                            fork_cpu / cpu if fork_cpu is not None and cpu > 0 else None))
        print(f"{case_name}/{name} done", file=sys.stderr)
    if ran:
        notes.append(f"The fork ran here ({', '.join(ran)}), alternating with rocesim (per scheme: the fork, then "
                     "rocesim's seeds); its FCTs are the stored ones unless said above.")
    if stored:
        notes.append(f"{STORED} the fork's CPU seconds stored in case.yaml, measured {case.get('cpu_made', 'elsewhere')}: "
                     f"not comparable with rocesim's here, so no ratio ({', '.join(stored)}; `--fork` measures both "
                     "in one sitting).")
    return "\n".join(out) + "\n\n" + "\n".join(notes) + "\n"


def summary_table(summary, n_seeds):
    """One line per case and scheme: rocesim / fork - 1 over all flows, the worst bin, and
    the fork's CPU over rocesim's where both were measured here."""
    measured = any(row[5] is not None for row in summary)
    lines = ["## Summary", "", "rocesim / fork - 1 of the FCT slowdown over all flows; the worst "
             "|ratio - 1| over the size bins" + ("; the seeds' spread" if n_seeds > 1 else "")
             + ("; the fork's CPU seconds over rocesim's (seed 1), both measured in this sitting" if measured else "")
             + ".", "",
             "| case | scheme | p50 | p95 | p99 | worst bin |" + (" seed spread |" if n_seeds > 1 else "")
             + (" CPU fork / rocesim |" if measured else ""),
             "|---|---|---|---|---|---|" + ("---|" if n_seeds > 1 else "") + ("---|" if measured else "")]
    for case, name, ratios, worst_bin, spread, cpu_ratio in summary:
        cells = " | ".join(f"{x * 100:+.0f}%" for x in ratios)
        tail = f" {spread * 100:.0f}% |" if n_seeds > 1 else ""
        if measured:
            tail += f" {cpu_ratio:.0f}x |" if cpu_ratio is not None else " - |"
        lines.append(f"| {case} | {name} | {cells} | {worst_bin * 100:.0f}% |{tail}")
    return "\n".join(lines) + "\n"


def header(args, argv, load0, cases_done, cases) -> str:
    """RESULTS.md's first paragraph: the command, how each side's figures were made, the
    sitting (machine, commit, date, load) and, while a run goes on, the cases done so far."""
    given = list(argv if argv is not None else sys.argv[1:])
    # the fork's binary by its place in the fork's clone (FORK), not this machine's path
    given = [FORK_SHOWN if a == args.fork and given[i - 1] == "--fork" else
             f"--fork={FORK_SHOWN}" if a.startswith("--fork=") else a for i, a in enumerate(given)]
    command = " ".join(["python validation/compare.py"] + given)
    seeds = (f" rocesim's figure is the median over seeds 1..{args.seeds}; 'seed spread' is the "
             "largest (max - min) / median of a row over those seeds (ECMP hashing and RED draws "
             "alone), a yardstick for how much of a difference is sampling." if args.seeds > 1 else "")
    level = config.AUTO_PARTITION if args.partition == "auto" else args.partition
    runs = (f" rocesim ran at `partition: {args.partition}`" + (f" ({level})" if level != args.partition else "")
            + f", each run on {args.threads} thread(s); its CPU s is the process CPU time of building and "
              "running it.")
    sitting = (f" Made on {machine()} at {git_commit()}, {time.strftime('%Y-%m-%d')}, load average "
               f"{load0:.1f} at the start and {os.getloadavg()[0]:.1f} at the end (CPU seconds run longer on a "
               "loaded machine, for both simulators alike).")
    only = (f" for {', '.join(args.fork_scheme)} only (`--fork-scheme`: a fork run of a fat-tree case takes "
            "minutes); the other schemes' CPU s is the stored figure, marked, without a ratio" if args.fork_scheme else "")
    cpu = (" The fork ran here (`--fork`, its optimized build)" + only + ", alternating with rocesim: its CPU s "
           "is user + system seconds of its process, and the ratio compares the two measured in this sitting."
           if args.fork else " The fork's CPU s is the figure stored with the reference (marked, with where and when it was "
                "made): not measured beside rocesim, so no ratio is given.")
    partial = ("" if len(cases_done) == len(cases) else
               f" So far (the run goes on, or was stopped): {len(cases_done)} of {len(cases)} cases "
               f"({', '.join(cases_done) or 'none'}; not yet: {', '.join(c for c in cases if c not in cases_done)}).")
    return (f"# rocesim against the HPCC ns-3 fork\n\nGenerated by `{command}`; FCT slowdown "
            "percentiles, fork / rocesim; 'worst ratio' is the largest relative difference in "
            "the row. The two simulators hash flows onto ECMP paths differently, so on the fat "
            "tree individual flows take different paths and only the distributions compare; "
            "a size bin's p99 rests on its few slowest flows." + seeds + runs + cpu + sitting + partial)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("cases", nargs="*", help="case folders under validation/reference (default: all)")
    p.add_argument("-s", "--scheme", action="append", help="only these schemes (repeatable)")
    p.add_argument("--bins", type=int, default=4, help="size bins of equal flow count (default 4)")
    p.add_argument("--seeds", type=int, default=1,
                   help="run rocesim with seeds 1..N, show the median and the seeds' spread (default 1)")
    p.add_argument("-o", "--output", help="also write the tables to this Markdown file (rewritten after each case)")
    p.add_argument("--partition", default="auto", help="rocesim's `partition` (default auto)")
    p.add_argument("--threads", type=int, default=1, help="threads of a run in parts (default 1)")
    p.add_argument("--fork", help="the HPCC fork's binary (its build/scratch/third): run it here beside rocesim and "
                                  "compare CPU seconds (default: the stored FCTs, and no CPU ratio)")
    p.add_argument("--fork-scheme", action="append",
                   help="with --fork, run the fork only for this scheme (repeatable; default: every scheme compared)")
    args = p.parse_args(argv)
    if args.fork and not os.access(args.fork, os.X_OK):
        p.error(f"--fork {args.fork}: not an executable file")
    if args.fork_scheme and not args.fork:
        p.error("--fork-scheme: only with --fork")
    unknown = sorted(set(args.fork_scheme or ()) - set(SCHEMES))
    if unknown:
        p.error(f"--fork-scheme {', '.join(unknown)}: not a scheme of the fork's run.py ({', '.join(SCHEMES)})")
    load0 = os.getloadavg()[0]
    ref_root = os.path.join(HERE, "reference")
    cases = args.cases or sorted(d for d in os.listdir(ref_root)
                                 if os.path.isfile(os.path.join(ref_root, d, "case.yaml")))
    summary, tables = [], []
    for c in cases:
        tables.append(compare_case(c, args.scheme, args.bins, args.seeds, summary, args.partition, args.threads,
                                   args.fork, args.fork_scheme))
        text = summary_table(summary, args.seeds) + "\n" + "\n".join(tables)
        if args.output:        # after each case: a long run stopped early keeps what it made
            with open(args.output, "w") as fh:
                fh.write(header(args, argv, load0, cases[:len(tables)], cases) + "\n\n" + text)
    print(text)


if __name__ == "__main__":
    main()
