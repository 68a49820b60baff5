"""What a run of a sweep was made from, so that a resumed sweep never shows an old result as current.

`resolve(run)` loads and checks a run's scenario as `rocesim check` does (nothing runs) and
describes what it is made from: the resolved scenario (the base with `set:` and the run's
parameters applied) in a canonical form, and every file its loading read (flow, CDF,
topology, workload and trace files, through `rocesim._textfile.recording_reads`; a Python
scheme's module; in flow mode, the calibration values used; in parts, the partition level,
`auto` resolved), each by its SHA-256.  `threads` is left out: the outputs are the same for
any number.  The digest of the two identifies the run:
its worker stores it in the run's `provenance.json`, and a later sweep compares it with
what the sweep resolves now (`run_folder.state`).  File paths enter the digest relative to the
scenario's folder, so a project moved as a whole keeps its runs current.  The rocesim
version is recorded for the reader and left out of the digest (a sweep cannot tell whether
another version would give other results).
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import sys

from rocesim import __version__
from rocesim import scenario as sc
from rocesim._textfile import recording_reads
from rocesim.errors import ScenarioError
from rocesim.sweep.spec import in_run, read_scenario

PROVENANCE_FILE = "provenance.json"
SHOWN_NAMES = 10            # stale runs named in the refusal (`--dry-run` lists them all)


def canonical(v):
    """`v` as plain JSON data, the same in every process: YAML's other types (dates, sets,
    non-string keys, bytes) become tagged strings, sets sorted."""
    if isinstance(v, dict):
        return {k if isinstance(k, str) else f"{type(k).__name__}:{k!r}": canonical(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [canonical(x) for x in v]
    if isinstance(v, (set, frozenset)):          # iteration order changes with the process's hash seed
        return {"set": sorted((canonical(x) for x in v), key=lambda x: json.dumps(x, sort_keys=True))}
    if v is None or isinstance(v, (str, bool, int, float)):
        return v
    return f"{type(v).__name__}:{v!r}"


def digest(scenario, files: dict) -> str:
    """SHA-256 of a canonical scenario and its files (relative path -> SHA-256)."""
    text = json.dumps({"scenario": scenario, "files": files}, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def resolve(run):
    """(Scenario, record) of a spec.Run: its scenario loaded and checked (nothing runs), and
    what it is made from, `{sha256, rocesim, base_dir, files, scenario}`.  Raises the
    scenario's ScenarioError."""
    raw = run.base if isinstance(run.base, dict) else read_scenario(run.base)
    raw = sc.apply_overrides(raw, run.overrides)          # a copy
    asked = copy.deepcopy(raw)                            # as asked, whatever building does to raw
    asked.pop("threads", None)                            # (the outputs do not depend on it)
    with recording_reads() as read:
        scn = sc.build(raw, run.base_dir)
        scn.sim.check()
    files = {os.path.relpath(p, run.base_dir): h for p, h in read.items()}
    files.update(_scheme_module(scn.sim.scheme))
    files.update(_flow_calibration(scn.sim))
    files.update(_partition(scn.sim))
    scenario = canonical(asked)                           # after the build: only a checked scenario
    return scn, {"sha256": digest(scenario, files), "rocesim": __version__,
                 "base_dir": os.path.abspath(run.base_dir), "files": files, "scenario": scenario}


def _scheme_module(scheme) -> dict:
    """{"python:MODULE": SHA-256 of its file} for a congestion-control scheme written in Python."""
    cls = getattr(scheme, "py_class", None)
    path = getattr(sys.modules.get(getattr(cls, "__module__", "")), "__file__", None)
    if cls is None or not path:
        return {}
    try:
        with open(path, "rb") as f:
            return {f"python:{cls.__module__}": hashlib.sha256(f.read()).hexdigest()}
    except OSError as e:                      # imported, then removed: nothing can vouch for it
        return {f"python:{cls.__module__}": f"unreadable: {e.strerror or e}"}


def _flow_calibration(sim) -> dict:
    """{"flow:calibration": SHA-256 of the share and startup a flow-mode run uses} (they come
    from rocesim/cc/flow_calibration.json unless the scenario gives them), {} at packet level."""
    if sim.mode != "flow":
        return {}
    used = json.dumps({"share": sim.fluid_calibration["share"], "startup_ps": sim.fluid_calibration["startup"]}, sort_keys=True)
    return {"flow:calibration": hashlib.sha256(used.encode()).hexdigest()}


def _partition(sim) -> dict:
    """{"partition:level": SHA-256 of the level} of a run in parts ('auto' resolved: what it
    means may change with rocesim's measurements, and the parts change the results), {} for
    one part (`partition: none`, the engine as always: digests as before parts existed)."""
    if sim.partition_level == "none":
        return {}
    return {"partition:level": hashlib.sha256(sim.partition_level.encode()).hexdigest()}


def check(runs) -> dict:
    """Load and check every run before any starts: {name: digest}.  The first run whose
    scenario is wrong raises one ScenarioError naming the key and the run."""
    digests = {}
    for run in runs:
        try:
            digests[run.name] = resolve(run)[1]["sha256"]
        except ScenarioError as e:
            raise in_run(e, run.name) from None
    return digests


def write(folder: str, record: dict) -> None:
    """Write `record` (from `resolve`) as the folder's provenance.json."""
    with open(os.path.join(folder, PROVENANCE_FILE), "w") as f:
        json.dump(record, f, indent=1, sort_keys=True)
        f.write("\n")


def stored(folder: str) -> str | None:
    """The digest a run folder records, or None (no provenance.json: an older rocesim)."""
    try:
        with open(os.path.join(folder, PROVENANCE_FILE)) as f:
            value = json.load(f).get("sha256")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


class StaleRuns(ScenarioError):
    """Finished runs of a sweep folder that cannot be shown as current: `changed` were made
    from another scenario or other files than the sweep now resolves, `unrecorded` record
    nothing of what they were made from (done by an older rocesim)."""

    def __init__(self, root: str, changed, unrecorded):
        self.root, self.changed, self.unrecorded = root, list(changed), list(unrecorded)
        parts = []
        if self.changed:
            parts.append(f"{len(self.changed)} finished run(s) were made from another scenario than the sweep "
                         f"now asks (its set:, base scenario or a file they read changed): {_names(self.changed)}")
        if self.unrecorded:
            parts.append(f"{len(self.unrecorded)} finished run(s) record nothing of what they were made from "
                         f"(done by an older rocesim), so none can be shown as current: {_names(self.unrecorded)}")
        super().__init__(root, "; ".join(parts) + "; run them again with --rerun-stale (rerun_stale=True "
                                                  "in Python), or sweep into another folder")

    def __reduce__(self):
        return type(self), (self.root, self.changed, self.unrecorded)


def _names(names) -> str:
    shown = ", ".join(names[:SHOWN_NAMES])
    return shown + (f" and {len(names) - SHOWN_NAMES} more (--dry-run lists them)" if len(names) > SHOWN_NAMES else "")
