"""The `rocesim` command: run scenarios, plot results, list schemes and settings."""
from __future__ import annotations

import argparse
import os
import signal
import sys

from rocesim import __version__, config, sweep
from rocesim import scenario as sc
from rocesim.keys import SECTIONS, lines
from rocesim.scenario.simai_conf import conf_yaml
from rocesim.settings import Section
from rocesim.sweep import run_folder
from rocesim.sweep.index import METRIC_COLUMNS
from rocesim.sweep.table import folders_markdown, markdown
from rocesim.results.run import stall_cause
from rocesim.run_cost import predict
from rocesim.cc import builtin_schemes, calibration, get_scheme
from rocesim.errors import ScenarioError


# what `rocesim run` writes, and `rocesim plot RUN ... --metric M` beside it: --force clears
# these from an output folder, and only these
RUN_FILES = ("flows.csv", "flows.parquet", "ports.csv", "pfc.csv", "pfc_timeline.csv", "pfc_timeline.png",
             "rates.csv", "queues.csv", "faults.csv", "deadlocks.csv", "collectives.csv", "iterations.csv",
             "summary.json", "fct.txt", "slowdown.png", "training.png", "collectives.png", "timeline.png",
             *(f"{m}.png" for m in METRIC_COLUMNS))


def _empty_output(outdir: str, force: bool) -> None:
    """Make sure `outdir` holds nothing from an earlier run: refuse a non-empty folder, or
    with --force delete the files an earlier run wrote (never anything else)."""
    if not os.path.isdir(outdir):
        if os.path.exists(outdir):
            raise ScenarioError(outdir, "exists and is not a folder")
        return
    present = sorted(os.listdir(outdir))
    if not present:
        return
    if not force:
        raise ScenarioError(outdir, f"the output folder is not empty ({', '.join(present[:4])}"
                                    f"{', ...' if len(present) > 4 else ''}); choose another folder, or "
                                    f"--force to replace an earlier run's results")
    foreign = [f for f in present if f not in RUN_FILES]
    if foreign:
        raise ScenarioError(outdir, f"holds files rocesim run did not write ({', '.join(foreign[:4])}); "
                                    f"--force only replaces an earlier run's results: choose another folder")
    for f in present:
        os.remove(os.path.join(outdir, f))


def _overrides(args) -> list:
    """The --set overrides, and `--mode M` and `--threads N` as `mode=M` and `threads=N`
    after them (checked as the scenario's keys)."""
    return args.set + [f"{key}={getattr(args, key)}" for key in ("mode", "threads") if getattr(args, key)]


def _what(sim) -> str:
    """How the network runs: the scheme, or flow mode."""
    return "flow mode" if sim.mode == "flow" else f"scheme {sim.scheme.name}"


def _parts(sim) -> str:
    """', 6 parts (leaves)' for a run in parts (`partition:`), else ''."""
    return f", {sim.n_parts} parts ({sim.partition_level})" if sim.n_parts > 1 else ""


def _run(args) -> int:
    """`rocesim run`.  SIGTERM stops it as Ctrl-C does (a sweep does the same): the run ends
    at its next slice and its results so far are written; the exit status is then 143."""
    got = []

    def terminated(signum, frame):
        got.append(signum)
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, terminated)
    try:
        status = _run_scenario(args)
    except KeyboardInterrupt:
        if not got:
            raise
        status = 130                  # before or after the run's loop: nothing to write
    finally:
        signal.signal(signal.SIGTERM, old)
    if got and status == 130:
        print("rocesim: stopped by SIGTERM", file=sys.stderr)
        return 143
    return status


def _run_scenario(args) -> int:
    scn = sc.load(args.scenario, _overrides(args))
    _empty_output(args.output, args.force)
    if not args.quiet:
        print(f"rocesim: {scn.name or os.path.basename(args.scenario)}: {scn.sim.topology.n_hosts} hosts, "
              f"{scn.sim.n_nodes} flows, {_what(scn.sim)}{_parts(scn.sim)}", file=sys.stderr)
    res = scn.sim.run(scn.stop, progress=not args.quiet, threads=scn.threads,
                      sample_interval=scn.output["sample_interval"], queue_ports=scn.output["queue_ports"])
    written = res.write(args.output, flows_format=scn.output["flows_format"], hpcc_fct=scn.output["hpcc_fct"])
    if scn.output["plot"] and not args.no_plot:
        from rocesim.results.plot import marked_entries, plot_pfc_timeline, plot_slowdown, plot_training   # matplotlib: only now
        label = scn.name or os.path.splitext(os.path.basename(args.scenario))[0]
        written.append(plot_slowdown([(label, res.data_flows())], os.path.join(args.output, "slowdown.png"),
                                     marks=marked_entries(scn.raw.get("traffic"))))
        if res.iterations is not None:
            written.append(plot_training([(label, res.iterations, res.collectives)],
                                         os.path.join(args.output, "training.png")))
        if res.collectives is not None and len(res.collectives["op"]):
            from rocesim.results.collective_plot import plot_collectives
            written.append(plot_collectives([(label, res.collectives, res.flows)],
                                            os.path.join(args.output, "collectives.png")))
        if res.samples:
            from rocesim.results.timeline_plot import plot_timeline
            written.append(plot_timeline(res.samples["rates"], res.samples["queues"],
                                         os.path.join(args.output, "timeline.png"), title=f"{label}: rates and queues"))
        if res.pfc_timeline is not None and len(res.pfc_timeline["port"]):
            written.append(plot_pfc_timeline(res.pfc_timeline, os.path.join(args.output, "pfc_timeline.png"),
                                             res.summary["sim_time_ns"], title=f"{label}: PFC pauses over time"))
    print(res.describe())
    print("wrote " + ", ".join(written))
    return _exit_status(res.summary)


EXIT_DEADLOCK = 3     # the run found a PFC deadlock
EXIT_STALLED = 4      # flows unfinished and nothing could move them (no deadlock found)
EXIT_CODES = {        # every exit status of the command; each command's --help lists its own
    0: "ok",
    1: "some sweep runs failed (error.txt in their folders); the same command retries them",
    2: "input error (usage, scenario, file or folder), named in one line on stderr",
    EXIT_DEADLOCK: "the run found a PFC deadlock",
    EXIT_STALLED: "the run stalled: flows unfinished and nothing could move them",
    130: "interrupted (Ctrl-C); what had finished is kept",
    143: "stopped by SIGTERM: a run writes its results so far, a sweep keeps its finished runs (the "
         "same command resumes it)",
}


def _exit_status(s) -> int:
    """0, or non-zero with a one-line reason on stderr: interrupted, deadlocked, stalled."""
    if s["interrupted"]:
        return 130
    if s.get("deadlock"):
        c = s["deadlock_cycles"][0]
        print(f"rocesim: deadlock: {len(s['deadlock_cycles'])} cycle(s); the first formed at "
              f"{c['formed_ns'] / 1e3:.1f} us at priority {c['priority']}: {' '.join(c['links'])}",
              file=sys.stderr)
        return EXIT_DEADLOCK
    if s.get("stalled"):
        # (a stalled run is searched for PFC cycles whatever `deadlock:` says: none holds it)
        print(f"rocesim: stalled: {s['flows_total'] - s['flows_completed']} flows unfinished and "
              f"nothing can move them, {stall_cause(s)}", file=sys.stderr)
        return EXIT_STALLED
    return 0


def _check(args) -> int:
    scn = sc.load(args.scenario, _overrides(args), estimate_workloads=True)
    scn.sim.check()
    est = scn.sim.workload_guard.estimated_nodes    # large workloads: sized from their first 2%, not built
    flows = f"about {scn.sim.n_nodes + est:,} flows (workloads sized from their first part)" if est else \
        f"{scn.sim.n_nodes} flows"
    print(f"ok: {scn.sim.topology.n_hosts} hosts, {scn.sim.topology.n_switches} switches, "
          f"{flows}, {_what(scn.sim)}")
    if scn.sim.platform.kind != "hosts":
        print(scn.sim.platform.describe())
    # notes on stderr: stdout stays what scripts read (the ok line, the platform)
    sys.stdout.flush()
    for empty in scn.sim.empty_collectives + scn.sim.workload_guard.estimated_empty:
        print(empty.describe(), file=sys.stderr)
    print(_partition_line(scn.sim), file=sys.stderr)
    note = scn.sim.threads_to_run(scn.threads)[1]
    if note is not None:
        print(note, file=sys.stderr)
    if scn.sim.mode == "flow":                # the fluid it runs: bare or a scheme's calibration
        print(calibration.describe(scn.sim.fluid_calibration, scn.sim.scheme.name), file=sys.stderr)
    if scn.sim.settings.fluid_load_balancing is not None:
        print(f"load balancing in the fluid: {scn.sim.settings.fluid_load_balancing}", file=sys.stderr)
    if scn.sim.mode == "packet":              # what the run will cost (rocesim.run_cost)
        print(predict(scn.sim).describe() + (" (not counting the workloads sized from their first part)"
                                            if est else "") + ("; if every flow finishes before the stop time"
                                                               if scn.stop is not None else ""), file=sys.stderr)
    return 0


def _partition_line(sim) -> str:
    """`check`'s line on the parts the packet core runs in (`partition:`; issue 20): how
    many, their lookahead and the share of dependency edges that cross them; in one part
    (packet mode), what `leaves` would cut."""
    level = sim.partition_level
    asked = f"partition: {level}" + (" (auto)" if sim.partition_setting == "auto" else "")
    if level == "none" and sim.mode == "flow":
        return f"{asked}: 1 part (flow mode)"
    part = sim.partition(level if level != "none" else "leaves")
    done, start = sim.dependency_hosts()
    share = (f"{part.crossing_share(done, start):.1%} of {done.size:,} dependencies cross parts" if done.size
             else "no dependencies")
    if sim.workload_guard.estimated_nodes:      # (not built: sized from their first part)
        share = (f"{share} (not counting the workloads sized from their first part)" if done.size
                 else "dependencies not counted (workloads sized from their first part, not built)")
    if level == "none":
        return f"{asked}: 1 part; partition: leaves would give {part.describe()}; {share}"
    return f"{asked}: {part.describe()}; {share}"


def _existing_folders(paths) -> None:
    """Refuse, before reading anything, a folder argument that names no folder."""
    for path in paths:
        if not os.path.isdir(path):
            raise ScenarioError(path, "not a folder" if os.path.exists(path) else "no such folder")


def _plot(args) -> int:
    _existing_folders(args.outdirs)
    sweep_dir = len(args.outdirs) == 1 and os.path.isfile(os.path.join(args.outdirs[0], "index.csv"))
    try:
        if sweep_dir:
            from rocesim.sweep.plot import plot_heatmap, plot_sweep
            if args.heatmap:
                print(plot_heatmap(args.outdirs[0], *args.heatmap, out_path=args.output, metric=args.metric))
            else:
                print(plot_sweep(args.outdirs[0], args.output, metric=args.metric, x=args.x, by=args.by))
            return 0
        if args.x or args.by or args.heatmap:
            raise ScenarioError("rocesim plot", "--x, --by and --heatmap need a sweep folder (one holding index.csv)")
        if args.metric:                          # run folders compared as a sweep's runs: a bar each
            from rocesim.sweep.plot import plot_folders
            print(plot_folders(args.outdirs, args.output, metric=args.metric))
            return 0
        from rocesim.results.plot import plot_dirs
        for path in plot_dirs(args.outdirs, args.output, args.bins):
            print(path)
    except FileNotFoundError as e:
        raise ScenarioError("", str(e)) from None
    except ValueError as e:
        if isinstance(e, ScenarioError):
            raise
        raise ScenarioError("rocesim plot", str(e)) from None
    return 0


def _sweep(args) -> int:
    sw = sweep.load(args.sweep, {"mode": args.mode} if args.mode else None)
    if args.dry_run:
        digests = sweep.check(sw.runs)            # every run loads and checks, or exit 2
        states = [run_folder.state(args.output, r.name, digests[r.name]) for r in sw.runs]
        for r, st in zip(sw.runs, states):
            print(f"{st:8} {r.name}")
        if run_folder.STALE in states:
            print(f"rocesim: {states.count(run_folder.STALE)} finished run(s) are stale (made from another scenario, "
                  f"or by a rocesim that recorded none); a sweep refuses them unless --rerun-stale", file=sys.stderr)
        return 0
    rep = sweep.run_runs(sw, args.output, processes=args.jobs, scheduler=args.scheduler, progress=not args.quiet,
                         rerun_stale=args.rerun_stale)
    print(f"{rep.skipped + rep.done}/{rep.total} runs done ({rep.skipped} before this sweep), "
          f"{rep.failed} failed; index: {', '.join(rep.index)}")
    if rep.interrupted:
        print(f"rocesim: sweep interrupted ({signal.Signals(rep.interrupted).name}): "
              f"{rep.total - rep.skipped - rep.done - rep.failed} run(s) not done; "
              f"run the same command again to resume", file=sys.stderr)
        return 128 + rep.interrupted
    if rep.failed:
        print(f"rocesim: {rep.failed} run(s) failed: see the error column of index.csv (and error.txt in "
              f"their folders); run the same command again to retry them", file=sys.stderr)
        return 1
    if rep.stale:
        print(f"rocesim: {rep.stale} run(s) read a file that changed while the sweep ran (index.csv lists "
              f"them stale); run the same command with --rerun-stale", file=sys.stderr)
        return 1
    return 0


def _table(args) -> int:
    _existing_folders(args.folders)
    split = lambda v: [x for x in v.split(",") if x] if v else None   # noqa: E731
    sweep_dir = len(args.folders) == 1 and os.path.isfile(os.path.join(args.folders[0], "index.csv"))
    if not sweep_dir and (args.rows or args.cols):
        raise ScenarioError("rocesim table", "--rows and --cols need a sweep folder (one holding index.csv); "
                                             "run folders are compared a column each")
    try:
        if sweep_dir:
            text = markdown(args.folders[0], args.metric or None, split(args.rows), args.cols)
        else:
            text = folders_markdown(args.folders, args.metric or None)
    except FileNotFoundError as e:
        raise ScenarioError("", str(e)) from None
    except ValueError as e:
        raise ScenarioError("rocesim table", str(e)) from None
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    print(text, end="")
    return 0


def _schemes(args) -> int:
    schemes = [get_scheme(args.name, "rocesim schemes")] if args.name else builtin_schemes().values()
    for s in schemes:
        print(f"{s.name}: {s.doc}")
        for name, accepts, default, doc in Section("", **s.params).describe():
            print(f"    {name} (default {default}): {doc}; {accepts}")
    return 0


def _keys(args) -> int:
    for line in lines(args.section):
        print(line)
    return 0


def _simai_conf(args) -> int:
    print(conf_yaml(args.file), end="")
    return 0


def _exit_status_help(codes) -> str:
    return "exit status:\n" + "\n".join(f"  {code:<4} {EXIT_CODES[code]}" for code in codes)


def build_parser() -> argparse.ArgumentParser:
    """The command line; every argument has a help line and every command lists its exit status."""
    raw = argparse.RawDescriptionHelpFormatter          # keeps the exit status table's lines
    p = argparse.ArgumentParser(prog="rocesim", description=__doc__, formatter_class=raw,
                                epilog=_exit_status_help(sorted(EXIT_CODES)))
    p.add_argument("--version", action="version", version=f"rocesim {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND",
                           help="`rocesim COMMAND --help` describes one")

    def command(name, codes, summary, func):
        c = sub.add_parser(name, help=summary, description=summary, formatter_class=raw,
                           epilog=_exit_status_help(codes))
        c.set_defaults(func=func)
        return c

    scenario_help = "scenario YAML file (`rocesim keys` lists its keys)"
    set_help = "override a scenario key (value in YAML syntax); repeatable"
    modes = config.MODE.type.options

    def mode_option(c, what):
        c.add_argument("--mode", choices=modes, help=f"{what} in this mode (as `--set mode=...`; "
                                                     f"`rocesim keys scenario` says what each does)")

    def threads_option(c, what):
        c.add_argument("--threads", metavar="N", help=f"{what} on N threads, or 'auto' (the cores available; as "
                                                      f"`--set threads=N`, over the scenario's `threads`); the "
                                                      f"outputs are the same for any N")
    plain = (0, 2, 130)                                  # commands that neither run nor sweep
    r = command("run", (0, 2, EXIT_DEADLOCK, EXIT_STALLED, 130, 143), "run a YAML scenario and write results", _run)
    r.add_argument("scenario", metavar="SCENARIO", help=scenario_help)
    r.add_argument("-o", "--output", required=True, help="output folder (new or empty; see --force)")
    r.add_argument("--set", action="append", default=[], metavar="KEY.PATH=VALUE", help=set_help)
    mode_option(r, "run the scenario")
    threads_option(r, "run the scenario")
    r.add_argument("--no-plot", action="store_true", help="write no figures")
    r.add_argument("--force", action="store_true",
                   help="replace an earlier run's results in the output folder (by default a non-empty folder is refused)")
    r.add_argument("-q", "--quiet", action="store_true", help="no progress line")
    c = command("check", plain, "check a scenario without running it", _check)
    c.add_argument("scenario", metavar="SCENARIO", help=scenario_help)
    c.add_argument("--set", action="append", default=[], metavar="KEY.PATH=VALUE", help=set_help)
    mode_option(c, "check the scenario")
    threads_option(c, "check the scenario as run")
    pl = command("plot", plain, "plot result folders (FCT slowdown by size, training) side by side, "
                                "or a sweep folder (a metric against a swept parameter, a heatmap)", _plot)
    pl.add_argument("outdirs", nargs="+", metavar="OUTDIR",
                    help="a `rocesim run` output folder (several: on one figure), or one sweep folder")
    pl.add_argument("-o", "--output", help="image file (default: in the first folder)")
    pl.add_argument("--bins", type=int, help="flow-size bins of the slowdown figure (default: from the flow count, "
                                             "at least 50 flows a bin, at most 20 bins)")
    pl.add_argument("--metric", help="an index.csv metric: against a sweep's parameters (default: "
                                     "iteration_mean_ns for training sweeps, else slowdown_p99), or of run "
                                     "folders a bar each (a sweep's seeds of one configuration: one bar with "
                                     "their min-max)")
    pl.add_argument("--x", help="sweep: the swept parameter on the x axis (default: the first but cc.scheme)")
    pl.add_argument("--by", help="sweep: a line per value of this parameter (default: cc.scheme)")
    pl.add_argument("--heatmap", nargs=2, metavar=("X", "Y"), help="sweep: a heatmap over two swept parameters")
    sw = command("sweep", (0, 1, 2, 130, 143),
                 "run a sweep file: a base scenario over a grid of parameters and seeds", _sweep)
    sw.add_argument("sweep", metavar="SWEEP", help="sweep YAML (base:, grid:, zip:, seeds:, set:)")
    sw.add_argument("-o", "--output", required=True, help="output folder (a folder per run, index.csv)")
    sw.add_argument("--mode", choices=modes, help="every run in this mode (as `set: {mode: ...}` in the sweep "
                                                  "file, over it); to run both, put `mode: [packet, flow]` in grid:")
    sw.add_argument("-j", "--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2),
                    help="runs at a time (default: half the cores)")
    sw.add_argument("--scheduler", metavar="ADDRESS",
                    help="run on a Dask cluster: tcp://HOST:8786, or 'local' for a LocalCluster of -j workers")
    sw.add_argument("--dry-run", action="store_true",
                    help="check every run's scenario and list the runs and their state (done, failed, stale, "
                         "missing); run nothing")
    sw.add_argument("--rerun-stale", action="store_true",
                    help="run again the finished runs made from another scenario or other input files than "
                         "the sweep now asks (by default the sweep refuses to start)")
    sw.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    tb = command("table", plain, "a markdown table of a sweep folder's index.csv (means over seeds), or of "
                                 "run folders side by side (a column each)", _table)
    tb.add_argument("folders", nargs="+", metavar="DIR",
                    help="a `rocesim sweep` output folder, or `rocesim run` output folders (the same metrics, "
                         "a column per folder)")
    tb.add_argument("--metric", action="append", default=[], help="an index.csv metric; repeatable "
                    "(default: slowdown p50, p95, p99, or the iteration time of training sweeps)")
    tb.add_argument("--rows", help="sweep: swept parameters of the rows, comma-separated (default: all but seed)")
    tb.add_argument("--cols", help="sweep: a swept parameter whose values become columns (one metric)")
    tb.add_argument("-o", "--output", help="also write the table to this file")
    sch = command("schemes", plain, "list congestion-control schemes and their parameters", _schemes)
    sch.add_argument("name", nargs="?", metavar="NAME",
                    help="only this scheme (or 'package.module:Class', a scheme written in Python)")
    k = command("keys", plain, "list every scenario key: sections, topology and traffic kinds, settings "
                               "with defaults, workload presets", _keys)
    k.add_argument("section", nargs="?", choices=SECTIONS, help="only this section")
    sc_ = command("simai-conf", plain, "print a SimAI.conf's (or an HPCC ns-3 fork config's) settings as "
                                       "rocesim's nic, switch and cc sections (YAML to paste into a scenario), "
                                       "with the keys rocesim has no setting for and why, as comments", _simai_conf)
    sc_.add_argument("file", metavar="FILE", help="SimAI.conf: one `KEY value...` per line")
    return p


def main(argv=None) -> int:
    p = build_parser()
    args = p.parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:                  # Ctrl-C outside a run's loop (loading, writing)
        print("rocesim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:                    # `rocesim ... | head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except ScenarioError as e:
        print(f"rocesim: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
