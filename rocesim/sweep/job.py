"""One run of a sweep into its folder, all or nothing.

A run writes into `ROOT/.incomplete/<name>.<pid>` and renames that folder to `ROOT/<name>`
only when it is complete: finished, or ended by a deadlock, a stall or the stop time
(its status records which).  A run that raised leaves `ROOT/<name>/error.txt` (and no
summary.json); an interrupted or killed run leaves nothing but its temporary folder,
which the next sweep removes.  So a folder with `summary.json` is a result, and
rerunning a sweep runs exactly the runs without one.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import traceback

INCOMPLETE = ".incomplete"
PARAMS_FILE = "params.json"
ERROR_FILE = "error.txt"
LOCK_FILE = ".lock"

DONE, FAILED, MISSING = "done", "failed", "missing"


def state(root: str, name: str) -> str:
    """`done` (summary.json and no error.txt), `failed` (error.txt) or `missing`."""
    d = os.path.join(root, name)
    if os.path.isfile(os.path.join(d, ERROR_FILE)):
        return FAILED
    if os.path.isfile(os.path.join(d, "summary.json")):
        return DONE
    return MISSING


def status(summary: dict) -> str:
    """What a complete run's summary says about how it ended."""
    if summary.get("deadlock"):
        return "deadlock"
    if summary.get("stalled"):
        return "stalled"
    if summary.get("flows_completed", 0) < summary.get("flows_total", 0):
        return "stopped"                   # the stop time came first
    return "ok"


def run_one(run, root: str) -> dict:
    """Run `run` (a spec.Run) into `root/<name>`; returns {name, state, status, error}.

    Never raises for a failure of the run itself: the traceback goes to error.txt.
    """
    from rocesim import scenario as sc
    tmp = os.path.join(root, INCOMPLETE, f"{run.name}.{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    record = {"name": run.name, "params": run.params, "overrides": list(run.overrides),
              "base": run.base if isinstance(run.base, str) else "inline"}
    try:
        if isinstance(run.base, str):
            scn = sc.load(run.base, run.overrides)
        else:
            scn = sc.build(sc.apply_overrides(run.base, run.overrides), run.base_dir)
        res = scn.sim.run(scn.stop, progress=False, sample_interval=scn.output["sample_interval"],
                          queue_ports=scn.output["queue_ports"])
        if res.summary["interrupted"]:              # never recorded as a result
            shutil.rmtree(tmp, ignore_errors=True)
            return {"name": run.name, "state": MISSING, "status": "interrupted", "error": None}
        res.write(tmp, flows_format=scn.output["flows_format"], hpcc_fct=scn.output["hpcc_fct"])
        record["status"] = status(res.summary)
        outcome = {"name": run.name, "state": DONE, "status": record["status"], "error": None}
    except Exception as e:  # noqa: BLE001 - any failure of one run is recorded, the sweep goes on
        for f in os.listdir(tmp):              # keep no half-written result beside the error
            p = os.path.join(tmp, f)
            shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
        text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        with open(os.path.join(tmp, ERROR_FILE), "w") as f:
            f.write(text)
        record["status"] = "failed"
        outcome = {"name": run.name, "state": FAILED, "status": "failed", "error": _short(e)}
    with open(os.path.join(tmp, PARAMS_FILE), "w") as f:
        json.dump(record, f, indent=2)
        f.write("\n")
    place(tmp, os.path.join(root, run.name))
    return outcome


def record_failure(root: str, run, reason: str) -> dict:
    """Record a run whose worker died (killed, crashed) as failed with `reason`."""
    tmp = os.path.join(root, INCOMPLETE, f"{run.name}.failed")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    with open(os.path.join(tmp, ERROR_FILE), "w") as f:
        f.write(reason + "\n")
    with open(os.path.join(tmp, PARAMS_FILE), "w") as f:
        json.dump({"name": run.name, "params": run.params, "overrides": list(run.overrides),
                   "status": "failed"}, f, indent=2)
    place(tmp, os.path.join(root, run.name))
    return {"name": run.name, "state": FAILED, "status": "failed", "error": reason}


def place(tmp: str, final: str) -> None:
    """Move a finished temporary folder into place (replacing an earlier failed attempt)."""
    if os.path.isdir(final):
        shutil.rmtree(final)
    os.rename(tmp, final)


@contextlib.contextmanager
def sweep_lock(root: str):
    """Hold `root/.lock` for the length of a sweep: a second sweep into the same folder
    would remove the first one's runs in progress."""
    from rocesim.errors import ScenarioError
    try:
        import fcntl
    except ImportError:                       # not POSIX: no lock
        yield
        return
    with open(os.path.join(root, LOCK_FILE), "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise ScenarioError(root, "another rocesim sweep is writing into this folder; wait for it "
                                      "or use another folder") from None
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def clean_incomplete(root: str) -> None:
    """Remove what interrupted runs left behind (call before a sweep starts)."""
    shutil.rmtree(os.path.join(root, INCOMPLETE), ignore_errors=True)


def remove_incomplete_if_empty(root: str) -> None:
    try:
        os.rmdir(os.path.join(root, INCOMPLETE))
    except OSError:
        pass


def _short(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}" if not hasattr(e, "key") else str(e)
    return text.splitlines()[0][:300] if text else type(e).__name__
