"""One run of a sweep into its folder, all or nothing.

A run writes into `ROOT/.incomplete/<name>.<pid>` and renames that folder to `ROOT/<name>`
only when it is complete: finished, or ended by a deadlock, a stall or the stop time
(its status records which), with `provenance.json` saying what it was made from.  A run
that raised leaves `ROOT/<name>/error.txt` (and no summary.json); an interrupted or killed
run leaves nothing but its temporary folder, which the next sweep removes.  A folder that
cannot be written (permissions, a full disk, a file in the way) fails the run with the
reason, never the sweep.  So a folder with `summary.json` is a result, current when its
provenance matches what the sweep now resolves, and rerunning a sweep runs exactly the
runs without one.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import traceback

try:
    import fcntl
except ImportError:                           # not POSIX: sweeps run without a lock
    fcntl = None

import rocesim.sweep.provenance as provenance
from rocesim.errors import ScenarioError

INCOMPLETE = ".incomplete"
PARAMS_FILE = "params.json"
ERROR_FILE = "error.txt"
LOCK_FILE = ".lock"

DONE, FAILED, MISSING, STALE = "done", "failed", "missing", "stale"
# a sweep spreads its runs over the cores (`-j`): each run takes this many threads, unless
# the sweep file sets `threads` (the outputs are the same for any number)
SWEEP_THREADS = 1


def state(root: str, name: str, digest: str | None = None) -> str:
    """`done` (summary.json and no error.txt), `failed` (error.txt) or `missing`; given the
    `digest` the sweep now resolves for the run (`provenance.check`), a done run whose
    provenance.json records another one, or none, is `stale`."""
    d = os.path.join(root, name)
    if os.path.isfile(os.path.join(d, ERROR_FILE)):
        return FAILED
    if not os.path.isfile(os.path.join(d, "summary.json")):
        return MISSING
    if digest is not None and provenance.stored(d) != digest:
        return STALE
    return DONE


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

    Never raises for a failure of the run (the traceback goes to error.txt) nor of the
    file system (the reason is in `error`, and in error.txt if that can be written; if
    not, the outcome says `recorded: False`)."""
    tmp = os.path.join(root, INCOMPLETE, f"{run.name}.{os.getpid()}")
    try:
        _fresh(tmp)
        outcome = _run_into(run, tmp)
        if outcome["state"] != MISSING:
            place(tmp, os.path.join(root, run.name))
        return outcome
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        return record_failure(root, run, f"cannot write the run's folder: {_os_reason(e)}")


def _run_into(run, tmp: str) -> dict:
    """Run into the empty folder `tmp`: results and provenance.json, or error.txt; then
    params.json.  Raises OSError only when even error.txt cannot be written."""
    record = {"name": run.name, "params": run.params, "overrides": list(run.overrides),
              "base": run.base if isinstance(run.base, str) else "inline"}
    try:
        scn, made_from = provenance.resolve(run)
        res = scn.sim.run(scn.stop, progress=False, sample_interval=scn.output["sample_interval"],
                          queue_ports=scn.output["queue_ports"],
                          threads=scn.threads if run.sets("threads") else SWEEP_THREADS)
        if res.summary["interrupted"]:              # never recorded as a result
            shutil.rmtree(tmp, ignore_errors=True)
            return _outcome(run, MISSING, "interrupted")
        res.write(tmp, flows_format=scn.output["flows_format"], hpcc_fct=scn.output["hpcc_fct"])
        provenance.write(tmp, made_from)
        record["status"] = status(res.summary)
        outcome = _outcome(run, DONE, record["status"])
    except Exception as e:  # noqa: BLE001 - any failure of one run is recorded, the sweep goes on
        _fresh(tmp)                                # keep no half-written result beside the error
        _write(os.path.join(tmp, ERROR_FILE), "".join(traceback.format_exception(type(e), e, e.__traceback__)))
        record["status"], record["error"] = "failed", _short(e)
        outcome = _outcome(run, FAILED, "failed", record["error"])
    _write(os.path.join(tmp, PARAMS_FILE), json.dumps(record, indent=2) + "\n")
    return outcome


def record_failure(root: str, run, reason: str) -> dict:
    """Record a run as failed with `reason` (its worker died, its folder cannot be written)
    and return its outcome.  Never raises: when nothing can be written, the outcome alone
    carries the reason (and says `recorded: False`)."""
    tmp = os.path.join(root, INCOMPLETE, f"{run.name}.failed")
    outcome = _outcome(run, FAILED, "failed", reason)
    try:
        _fresh(tmp)
        _write(os.path.join(tmp, ERROR_FILE), reason + "\n")
        _write(os.path.join(tmp, PARAMS_FILE),
               json.dumps({"name": run.name, "params": run.params, "overrides": list(run.overrides),
                           "status": "failed"}, indent=2) + "\n")
        place(tmp, os.path.join(root, run.name))
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        outcome["recorded"] = False
    return outcome


def place(tmp: str, final: str) -> None:
    """Move a finished temporary folder into place.  An earlier attempt there (failed, or
    stale) is first moved aside and removed after, so `final` holds one or the other."""
    aside = None
    if os.path.isdir(final) and not os.path.islink(final):
        aside = tmp + ".replaced"
        try:
            os.rename(final, aside)
        except OSError as e:                  # name the folder that could not be moved, not where to
            raise OSError(e.errno, e.strerror, final) from None
    try:
        os.rename(tmp, final)
    except OSError:
        if aside is not None:
            os.rename(aside, final)               # put the earlier attempt back
        raise
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)


def _outcome(run, st: str, status_: str, error: str | None = None) -> dict:
    return {"name": run.name, "state": st, "status": status_, "error": error}


def _fresh(folder: str) -> None:
    """An empty `folder` (whatever was there removed)."""
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _os_reason(e: OSError) -> str:
    """`Permission denied: /out/run` from an OSError."""
    path = e.filename2 if e.filename2 is not None else e.filename
    return f"{e.strerror or e}: {path}" if path is not None else str(e.strerror or e)


@contextlib.contextmanager
def sweep_lock(root: str):
    """Hold `root/.lock` for the length of a sweep (a second sweep into the same folder
    would remove the first one's runs in progress), and remove it when the sweep ends."""
    if fcntl is None:                         # not POSIX: no lock
        yield
        return
    path = os.path.join(root, LOCK_FILE)
    while True:
        try:
            f = open(path, "w")
        except OSError as e:
            raise ScenarioError(root, f"cannot write into the output folder: {_os_reason(e)}") from None
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            raise ScenarioError(root, "another rocesim sweep is writing into this folder; wait for it "
                                      "or use another folder") from None
        try:                                  # still the file at `path`, not one a sweep ending removed?
            if os.stat(path).st_ino == os.fstat(f.fileno()).st_ino:
                break
        except OSError:
            pass
        f.close()
    try:
        yield
    finally:
        with contextlib.suppress(OSError):    # removed while held: a sweep that opened it meanwhile retries
            os.remove(path)
        fcntl.flock(f, fcntl.LOCK_UN)
        f.close()


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
