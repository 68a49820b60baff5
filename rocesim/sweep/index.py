"""`index.csv`: one row per run of a sweep, its parameters and summary metrics.

Built from the run folders (summary.json, error.txt, provenance.json), so it is the same
whichever scheduler ran them, and rebuilt after every sweep; a finished run made from
something other than what the sweep now asks is listed `stale`, without its metrics, so
that nothing reading the index (`rocesim table`, `rocesim plot`) shows it as current.
Also `index.parquet` when pyarrow is installed.  Columns (OUTPUTS.md documents them): `run`, `state`, `status`,
one column per swept key path (and `seed`), then METRIC_COLUMNS, then `error`.
"""
from __future__ import annotations

import contextlib
import csv
import json
import os
from dataclasses import dataclass

import rocesim.sweep.run_folder as run_folder
from rocesim.results.run import read_csv
from rocesim.sweep.spec import SCENARIO_KEY, format_value

@dataclass(frozen=True)
class Metric:
    """A summary.json field copied into the index, and how tables and figures show it:
    `label` in words (with the unit after scaling), values times `scale`, `fmt`."""
    name: str
    label: str
    scale: float = 1.0
    fmt: str = "{:.4g}"


def _count(name, label):
    return Metric(name, label, fmt="{:.0f}")


def _ms(name, label):
    return Metric(name, f"{label} (ms)", 1e-6, "{:.3f}")


# the summary's metrics, by class (OUTPUTS.md defines them; the training ones are empty for
# runs without collectives or iterations, the background ones for runs without background)
METRICS = (
    _count("flows_total", "flows"), _count("flows_completed", "flows completed"),
    *(Metric(f"slowdown_{p}", f"FCT slowdown {p}, all network flows") for p in ("p50", "p95", "p99", "max")),
    _count("background_flows", "background flows"),
    *(Metric(f"background_slowdown_{p}", f"FCT slowdown {p}, background flows") for p in ("p50", "p95", "p99", "max")),
    _count("collectives", "collectives"), _count("collectives_completed", "collectives completed"),
    _ms("collective_duration_p50_ns", "collective duration p50"),
    _ms("collective_duration_p99_ns", "collective duration p99"),
    _count("iterations", "iterations"), _count("iterations_completed", "iterations completed"),
    _ms("iteration_mean_ns", "iteration time, mean"), _ms("iteration_p99_ns", "iteration time p99"),
    _count("pfc_pauses", "PFC pauses"), _count("drops", "drops"), _count("cnps", "CNPs"),
    Metric("uplink_imbalance", "uplink imbalance (busiest / mean, worst tier)", fmt="{:.3g}"),
    _count("timeouts", "timeouts"), _ms("sim_time_ns", "simulated time"), _count("events", "events"),
    Metric("cpu_s", "CPU time per run (s)", fmt="{:.1f}"),
)
BY_NAME = {m.name: m for m in METRICS}
METRIC_COLUMNS = tuple(BY_NAME)


def metric(name: str) -> Metric:
    """The declaration of index column `name`; ValueError naming the valid ones."""
    if name not in BY_NAME:
        raise ValueError(f"unknown metric {name!r}; valid: {', '.join(METRIC_COLUMNS)}")
    return BY_NAME[name]


def default_metrics(rows) -> list[str]:
    """What a sweep's table and figure show unless told: iteration time for training runs
    (with the background flows' p99 slowdown when they also carry background traffic),
    else the slowdown percentiles of the network flows."""
    if any(r.get("iteration_mean_ns") for r in rows):
        return ["iteration_mean_ns"] + (["background_slowdown_p99"]
                                        if any(r.get("background_slowdown_p99") for r in rows) else [])
    return ["slowdown_p50", "slowdown_p95", "slowdown_p99"]


# parameters named in words on axes and in tables (others: "<last part> of <the rest>")
PARAMETER_NAMES = {"cc.scheme": "congestion-control scheme", "seed": "seed", "scenario": "scenario"}


def parameter_label(key: str) -> str:
    """A swept key path in words: `traffic[0].load` -> "load of traffic[0]"."""
    if key in PARAMETER_NAMES:
        return PARAMETER_NAMES[key]
    head, _, last = key.rpartition(".")
    return f"{last.replace('_', ' ')} of {head}" if head else key.replace("_", " ")


def metric_cells(summary: dict) -> dict:
    """The index's metric columns of a run's summary.json (empty where it has null or lacks
    the key)."""
    return {k: "" if summary.get(k) is None else summary[k] for k in METRIC_COLUMNS}


def read_folders(folders) -> list[dict]:
    """Separate results folders (`rocesim run` outputs, or a sweep's runs) as rows of an
    index: `run` (the folder's name, or its path as given when two share a name), `status`
    and the metric columns of its summary.json.  FileNotFoundError naming a folder without one."""
    names = [os.path.basename(os.path.normpath(d)) for d in folders]
    out = []
    for d, name in zip(folders, names):
        path = os.path.join(d, "summary.json")
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{d} holds no summary.json (is it a rocesim run's output folder?)")
        with open(path) as f:
            s = json.load(f)
        out.append({"run": name if names.count(name) == 1 else d, "status": run_folder.status(s), **metric_cells(s)})
    return out


STALE_REASON = "made from another scenario than the sweep now asks (rerun it with --rerun-stale)"


def rows(root: str, runs, param_names, digests=None, unrecorded=None) -> list[dict]:
    """A row for every run with a folder (done, failed or stale), in the sweep's order.

    `digests` (name -> what the sweep now resolves, `provenance.check`): a done run made
    from something else is `stale`, with no metrics.  `unrecorded` (name -> reason): runs
    that failed without a folder to say so (it could not be written)."""
    digests, unrecorded = digests or {}, unrecorded or {}
    out = []
    for run in runs:
        st = run_folder.FAILED if run.name in unrecorded else run_folder.state(root, run.name, digests.get(run.name))
        if st == run_folder.MISSING:
            continue
        d = os.path.join(root, run.name)
        row = {"run": run.name, "state": st, "status": st}
        for k in param_names:
            v = run.params.get(k)
            row[k] = "" if v is None else (v if k == SCENARIO_KEY else format_value(v))
        row.update({k: "" for k in METRIC_COLUMNS})
        if st == run_folder.DONE:
            with open(os.path.join(d, "summary.json")) as f:
                s = json.load(f)
            row["status"] = run_folder.status(s)
            row.update(metric_cells(s))
            row["error"] = ""
        elif st == run_folder.STALE:
            row["error"] = STALE_REASON
        elif run.name in unrecorded:
            row["error"] = _last_line(unrecorded[run.name] or "")
        else:
            row["error"] = _error_line(d)
        out.append(row)
    return out


def _error_line(folder: str) -> str:
    """A failed run's error in one line: params.json's `error` (the exception, without the
    notes a traceback may end with), else the last line of error.txt."""
    try:
        with open(os.path.join(folder, run_folder.PARAMS_FILE)) as f:
            error = json.load(f).get("error")
        if isinstance(error, str) and error:
            return error[:300]
    except (OSError, ValueError, AttributeError):
        pass
    with open(os.path.join(folder, run_folder.ERROR_FILE)) as f:
        return _last_line(f.read())


def _last_line(text: str) -> str:
    """The last non-blank line of an error (a traceback's is the exception), cut at 300 characters."""
    lines = [x for x in text.splitlines() if x.strip()]
    return lines[-1].strip()[:300] if lines else ""


def columns(param_names) -> list[str]:
    return ["run", "state", "status", *param_names, *METRIC_COLUMNS, "error"]


def write(root: str, runs, param_names, digests=None, unrecorded=None) -> list[str]:
    """Write index.csv (and index.parquet with pyarrow) atomically; returns the paths.
    `digests` and `unrecorded` as for `rows`."""
    table = rows(root, runs, param_names, digests, unrecorded)
    cols = columns(param_names)
    path = os.path.join(root, "index.csv")
    tmp = path + ".tmp"
    try:
        with open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, cols)
            w.writeheader()
            w.writerows(table)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):       # no half-written index left behind
            os.remove(tmp)
        raise
    written = [path]
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq
    except ImportError:
        return written
    pq_path = os.path.join(root, "index.parquet")
    pq.write_table(pacsv.read_csv(path) if table else pa.table({c: pa.array([], pa.string()) for c in cols}),
                   pq_path + ".tmp")
    os.replace(pq_path + ".tmp", pq_path)
    written.append(pq_path)
    return written


def read(root: str) -> dict:
    """index.csv of a sweep folder as columns (numbers as floats, the rest as strings)."""
    path = os.path.join(root, "index.csv")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{root} holds no index.csv (is it a sweep folder?)")
    return read_csv(path)


def read_done(root) -> tuple[list[dict], list[str]]:
    """(rows of the runs that are done, swept parameter names) of a sweep folder."""
    path = os.path.join(root, "index.csv")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{root} holds no index.csv (is it a sweep folder?)")
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        cols = reader.fieldnames or []
        rows = [r for r in reader if r["state"] == "done"]
    return rows, cols[cols.index("status") + 1:cols.index(METRIC_COLUMNS[0])]
