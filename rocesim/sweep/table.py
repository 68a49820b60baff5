"""Markdown tables from a sweep's index.csv (`rocesim table DIR`).

Rows are the combinations of the `rows` parameters (default: every swept parameter but
`seed`); columns are metrics, or with `cols`, one metric per value of that parameter.
Cells are means over what is left (seeds); a run that failed or is missing is left out,
and a cell with no run is `-`.
"""
from __future__ import annotations

import numpy as np

from rocesim.sweep.index import METRIC_COLUMNS, read_done

# how a metric is shown: (header, scale, format)
SHOWN = {"iteration_mean_ns": ("iteration time (ms)", 1e-6, "{:.3f}"),
         "sim_time_ns": ("simulated time (ms)", 1e-6, "{:.3f}"),
         "cpu_s": ("CPU s", 1.0, "{:.1f}"),
         **{m: (m, 1.0, "{:.0f}") for m in ("flows_total", "flows_completed", "iterations", "pfc_pauses", "drops",
                                           "cnps", "timeouts", "events")}}


def _show(metric):
    return SHOWN.get(metric, (metric, 1.0, "{:.4g}"))


def _cell(rows, metric):
    vals = [float(r[metric]) for r in rows if r.get(metric, "") != ""]
    if not vals:
        return "-"
    header, scale, fmt = _show(metric)
    return fmt.format(np.mean(vals) * scale)


def markdown(root, metrics=None, rows_by=None, cols_by=None) -> str:
    """The table as markdown text."""
    rows, params = read_done(root)
    if metrics is None:
        metrics = (["iteration_mean_ns"] if any(r.get("iteration_mean_ns") for r in rows)
                   else ["slowdown_p50", "slowdown_p95", "slowdown_p99"])
    for m in metrics:
        if m not in METRIC_COLUMNS:
            raise ValueError(f"unknown metric {m!r}; valid: {', '.join(METRIC_COLUMNS)}")
    rows_by = rows_by or [p for p in params if p not in ("seed", cols_by)]
    for p in rows_by + ([cols_by] if cols_by else []):
        if p not in params:
            raise ValueError(f"{p!r} is not a swept parameter; swept: {', '.join(params)}")
    keys = list(dict.fromkeys(tuple(r[p] for p in rows_by) for r in rows))
    if cols_by:
        if len(metrics) != 1:
            raise ValueError("with a column parameter, give one metric")
        values = list(dict.fromkeys(r[cols_by] for r in rows))
        head = rows_by + [f"{_show(metrics[0])[0]}, {cols_by}={v}" for v in values]
        body = [list(k) + [_cell([r for r in rows if tuple(r[p] for p in rows_by) == k and r[cols_by] == v],
                                 metrics[0]) for v in values] for k in keys]
    else:
        head = rows_by + [_show(m)[0] for m in metrics] + ["runs"]
        body = []
        for k in keys:
            sel = [r for r in rows if tuple(r[p] for p in rows_by) == k]
            body.append(list(k) + [_cell(sel, m) for m in metrics] + [str(len(sel))])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(c if c != "" else "(base)" for c in row) + " |" for row in body]
    return "\n".join(lines) + "\n"
