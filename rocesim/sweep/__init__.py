"""Sweeps: many runs of one scenario with parameters varied, each into its own folder.

    from rocesim import sweep
    report = sweep.run("sweeps/example.yaml", "out/example", processes=2)

`spec` reads a sweep file into named runs, `provenance` loads and checks them and says
what each is made from, `job` runs one into its folder all or nothing, `local` is the
process pool of this machine, `cluster` the Dask one, `progress` the progress line and
`index` the table of results.  Every run is checked before any starts.  A rerun of the
same sweep runs exactly the runs that are missing or failed, and refuses finished runs
made from something other than what it now asks (stale) unless told to run them again.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading
from dataclasses import dataclass

from rocesim.errors import ScenarioError
import rocesim.sweep.index as index
import rocesim.sweep.run_folder as run_folder
from rocesim.sweep.local import Interrupted, run_local
from rocesim.sweep.progress import Progress
from rocesim.sweep.provenance import StaleRuns, check, stored
from rocesim.sweep.spec import Run, Sweep, expand, load, run_name

__all__ = ["run", "run_runs", "check", "load", "expand", "run_name", "Run", "Sweep", "Report", "Interrupted",
           "StaleRuns"]


@dataclass
class Report:
    total: int
    skipped: int            # done by an earlier sweep
    done: int               # done now
    failed: int
    interrupted: int = 0    # the signal that stopped the sweep, 0 if none
    index: list = None      # paths of the index files
    stale: int = 0          # finished runs not current at the end (their inputs changed while the sweep ran)


def run(sweep_file, outdir: str, processes: int = 2, scheduler=None, progress: bool = True,
        stream=None, interval_s: float = 5.0, rerun_stale: bool = False) -> Report:
    """Run a sweep file's missing and failed runs into `outdir`; see `run_runs`."""
    return run_runs(load(sweep_file), outdir, processes, scheduler, progress, stream, interval_s, rerun_stale)


def run_runs(sw: Sweep, outdir: str, processes: int = 2, scheduler=None, progress: bool = True,
             stream=None, interval_s: float = 5.0, rerun_stale: bool = False) -> Report:
    """Run the runs of `sw` that have no complete and current folder in `outdir`.

    Every run's scenario is loaded and checked first (`check`): the first mistake is one
    ScenarioError naming the run and the key, and nothing is created.  Finished runs made
    from another scenario or other files than the sweep now resolves (or by a rocesim
    that recorded nothing) raise StaleRuns before anything starts, unless `rerun_stale`.
    `scheduler`: None for worker processes on this machine (`processes` of them), or a
    Dask scheduler address (`tcp://host:8786`), `"local"` for a Dask LocalCluster of
    `processes` workers, or a `distributed.Client`.  Returns a Report; on Ctrl-C or
    SIGTERM the report's `interrupted` is the signal (runs finished so far are kept).
    A run whose folder cannot be written fails with the reason; the sweep goes on.
    """
    digests = check(sw.runs)
    try:
        os.makedirs(outdir, exist_ok=True)
    except OSError as e:
        raise ScenarioError(outdir, f"cannot create the output folder: {e.strerror or e}") from None
    with run_folder.sweep_lock(outdir):
        return _run_locked(sw, outdir, digests, processes, scheduler, progress, stream, interval_s, rerun_stale)


def _run_locked(sw, outdir, digests, processes, scheduler, progress, stream, interval_s, rerun_stale) -> Report:
    states = {r.name: run_folder.state(outdir, r.name, digests[r.name]) for r in sw.runs}
    stale = [r.name for r in sw.runs if states[r.name] == run_folder.STALE]
    if stale and not rerun_stale:
        with contextlib.suppress(OSError):       # start nothing, but let the index no longer show them as current
            index.write(outdir, sw.runs, sw.param_names, digests)
        unrecorded = [n for n in stale if stored(os.path.join(outdir, n)) is None]
        raise StaleRuns(outdir, [n for n in stale if n not in unrecorded], unrecorded)
    run_folder.clean_incomplete(outdir)
    todo = [r for r in sw.runs if states[r.name] != run_folder.DONE]
    skipped = len(sw.runs) - len(todo)
    bar = Progress(len(sw.runs), skipped, stream, interval_s, enabled=progress)
    for st, what in ((run_folder.FAILED, "failed"), (run_folder.STALE, "stale")):
        again = sum(states[r.name] == st for r in todo)
        if again:
            bar.message(f"[sweep] running again {again} {what} run(s)")
    report = Report(len(sw.runs), skipped, 0, 0)
    outcomes = {}

    def on_result(outcome):
        outcomes[outcome["name"]] = outcome
        bar.result(outcome)

    bar.tick(0)
    try:
        if scheduler is None:
            run_local(todo, outdir, max(1, processes), on_result, bar.tick)
        else:
            from rocesim.sweep.cluster import run_dask
            run_dask(todo, outdir, scheduler, max(1, processes), on_result, bar.tick)
    except Interrupted as e:
        report.interrupted = int(e.signum)
    with _signals_held(report.interrupted):      # a second Ctrl-C must not cut the index short
        # count what is on disk: a Dask task running when the sweep stopped may still have finished
        after = {r.name: run_folder.state(outdir, r.name, digests[r.name]) for r in todo}
        # failures that could not be written into a folder: the outcome alone has their reason
        unrecorded = {n: o["error"] for n, o in outcomes.items() if o.get("recorded") is False}
        ended = [run_folder.FAILED if n in unrecorded else s for n, s in after.items()]
        report.done, report.failed = ended.count(run_folder.DONE), ended.count(run_folder.FAILED)
        report.stale = ended.count(run_folder.STALE) if not report.interrupted else 0
        bar.done, bar.failed = report.done, report.failed
        bar.close()
        if scheduler is None:                    # every worker is gone: nothing writes there now
            run_folder.clean_incomplete(outdir)
        else:                                    # remote runs may still be writing there
            run_folder.remove_incomplete_if_empty(outdir)
        try:
            report.index = index.write(outdir, sw.runs, sw.param_names, digests, unrecorded)
        except OSError as e:
            raise ScenarioError(os.path.join(outdir, "index.csv"),
                                f"cannot write the index: {e.strerror or e}; the runs' folders are kept "
                                f"({report.done} done now, {report.failed} failed): run the sweep again to "
                                f"write it") from None
    return report


@contextlib.contextmanager
def _signals_held(active: bool):
    """Ignore SIGINT and SIGTERM inside (when `active` and in the main thread)."""
    if not active or threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
