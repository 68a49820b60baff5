"""Markdown tables from a sweep's index.csv (`rocesim table DIR`), and of separate run
folders compared as a sweep's runs (`rocesim table RUN1 RUN2 ...`: `folders_markdown`).

Rows are the combinations of the `rows` parameters (default: every swept parameter but
`seed`); columns are metrics, or with `cols`, one metric per value of that parameter.
Cells are means over what is left (seeds), and the spread of those runs is shown beside
them: a `min-max` column after each metric, or `mean (min-max)` in a cell with `cols`.
A run that failed or is missing is left out, and a cell with no run is `-`.  Metrics and
parameters are named in words (`rocesim.sweep.index.METRICS`, `parameter_label`).
"""
from __future__ import annotations

import numpy as np

from rocesim.sweep.index import default_metrics, metric, parameter_label, read_done, read_folders


def _values(rows, name):
    m = metric(name)
    return [float(r[name]) * m.scale for r in rows if r.get(name, "") != ""]


def _mean(rows, name) -> str:
    vals = _values(rows, name)
    return metric(name).fmt.format(np.mean(vals)) if vals else "-"


def _spread(rows, name) -> str:
    """min-max of the runs behind a cell ("-" with fewer than two)."""
    vals = _values(rows, name)
    if len(vals) < 2:
        return "-"
    fmt = metric(name).fmt
    return f"{fmt.format(min(vals))}-{fmt.format(max(vals))}"


def _metrics(rows, metrics) -> list[str]:
    """The metrics asked (checked: ValueError listing the valid ones), or those shown by default."""
    metrics = metrics or default_metrics(rows)
    for m in metrics:
        metric(m)
    return metrics


def _lines(head, body) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(row) + " |" for row in body]


def markdown(root, metrics=None, rows_by=None, cols_by=None) -> str:
    """The table as markdown text."""
    rows, params = read_done(root)
    metrics = _metrics(rows, metrics)
    rows_by = rows_by or [p for p in params if p not in ("seed", cols_by)]
    for p in rows_by + ([cols_by] if cols_by else []):
        if p not in params:
            raise ValueError(f"{p!r} is not a swept parameter; swept: {', '.join(params)}")
    keys = list(dict.fromkeys(tuple(r[p] for p in rows_by) for r in rows))
    groups = {k: [r for r in rows if tuple(r[p] for p in rows_by) == k] for k in keys}
    repeated = any(len(g) > 1 for g in groups.values())
    head = [parameter_label(p) for p in rows_by]
    if cols_by:
        if len(metrics) != 1:
            raise ValueError("with a column parameter, give one metric")
        name = metrics[0]
        values = list(dict.fromkeys(r[cols_by] for r in rows))
        head += [f"{metric(name).label}, {parameter_label(cols_by)} = {v}" for v in values]
        body, spread_shown = [], False
        for k in keys:
            cells = []
            for v in values:
                sel = [r for r in groups[k] if r[cols_by] == v]
                spread = _spread(sel, name)
                spread_shown |= spread != "-"
                cells.append(_mean(sel, name) + (f" ({spread})" if spread != "-" else ""))
            body.append(list(k) + cells)
    else:
        for m in metrics:
            head += [metric(m).label] + (["min-max"] if repeated else [])
        head.append("runs")
        body = []
        for k in keys:
            cells = []
            for m in metrics:
                cells += [_mean(groups[k], m)] + ([_spread(groups[k], m)] if repeated else [])
            body.append(list(k) + cells + [str(len(groups[k]))])
    lines = _lines(head, [[c if c != "" else "(base)" for c in row] for row in body])
    if cols_by and spread_shown:
        lines.append("\nCells: mean over runs (min-max).")
    return "\n".join(lines) + "\n"


def folders_markdown(folders, metrics=None) -> str:
    """Separate results folders (`rocesim run` outputs) compared as a sweep's runs: the same
    metrics, named and formatted as `markdown` shows them (by default the same ones), a row
    each, and a column per folder (its name; a cell with no value is `-`), after a row of
    how each run ended (`status`, as index.csv has it)."""
    rows = read_folders(folders)
    metrics = _metrics(rows, metrics)
    body = [["status"] + [r["status"] for r in rows]]
    body += [[metric(m).label] + [_mean([r], m) for r in rows] for m in metrics]
    return "\n".join(_lines(["metric"] + [r["run"] for r in rows], body)) + "\n"
