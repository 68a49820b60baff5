"""What a run of a sweep was made from, so that a resumed sweep never shows an old result as current.

`resolve(run)` loads and checks a run's scenario as `rocesim check` does (nothing runs) and
describes what it is made from: the resolved scenario (the base with `set:` and the run's
parameters applied) in a canonical form, and every file its loading read (flow, CDF,
topology, workload and trace files, through `rocesim._textfile.recording_reads`; and a
Python scheme's module), each by its SHA-256.  The digest of the two identifies the run.
File paths enter the digest relative to the scenario's folder, so a project moved as a
whole keeps its digests.  The rocesim version is recorded for the reader and left out of
the digest (a sweep cannot tell whether another version would give other results).
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import sys

from rocesim.errors import ScenarioError
from rocesim.sweep.spec import in_run, read_scenario

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
    from rocesim import __version__
    from rocesim import scenario as sc
    from rocesim._textfile import recording_reads
    raw = run.base if isinstance(run.base, dict) else read_scenario(run.base)
    raw = sc.apply_overrides(raw, run.overrides)          # a copy
    asked = copy.deepcopy(raw)                            # as asked, whatever building does to raw
    with recording_reads() as read:
        scn = sc.build(raw, run.base_dir)
    files = {os.path.relpath(p, run.base_dir): h for p, h in read.items()}
    files.update(_scheme_module(scn.sim.scheme))
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
