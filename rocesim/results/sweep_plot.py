"""Figures of a sweep folder's index.csv: a metric against a swept parameter, one line
per scheme (or bars when the scheme is the only parameter), and a heatmap over two.

Seeds, and any other swept parameter not drawn, are averaged over (the title says so);
runs that failed or are missing are left out.
"""
from __future__ import annotations

import os

import numpy as np

from rocesim.results.plot import plain_axis, plt, zoomed_bars
from rocesim.sweep.index import METRIC_COLUMNS, read_done

LABELS = {"slowdown_p50": "FCT slowdown p50", "slowdown_p95": "FCT slowdown p95",
          "slowdown_p99": "FCT slowdown p99", "slowdown_max": "FCT slowdown max",
          "iteration_mean_ns": "iteration time (ms)", "pfc_pauses": "PFC pauses", "drops": "drops",
          "sim_time_ns": "simulated time (ms)", "cpu_s": "CPU s per run"}
SCALE = {"iteration_mean_ns": 1e-6, "sim_time_ns": 1e-6}


def _values(rows, key):
    """The distinct values of a column in first-seen order, sorted numerically if numbers."""
    seen = list(dict.fromkeys(r[key] for r in rows))
    try:
        return sorted(seen, key=float)
    except ValueError:
        return seen


def _metric(rows, metric):
    vals = [float(r[metric]) for r in rows if r[metric] != ""]
    return np.mean(vals) * SCALE.get(metric, 1.0) if vals else np.nan


LINESTYLES = ("-", "--", "-.", ":")
MARKERS = "os^Dv<>p"          # lines that coincide stay visible


def series(rows, metric, x, by=None) -> tuple[list, dict]:
    """(x values, {value of `by` (None without): mean metric at each x value}), scaled
    for display (ms for times); missing combinations are NaN."""
    xs = _values(rows, x)
    lines = {}
    for g in (_values(rows, by) if by else [None]):
        sel = [r for r in rows if by is None or r[by] == g]
        lines[g] = [_metric([r for r in sel if r[x] == v], metric) for v in xs]
    return xs, lines


def grid(rows, metric, x, y) -> tuple[list, list, np.ndarray]:
    """(x values, y values, mean metric [y, x]) for a heatmap."""
    xs, ys = _values(rows, x), _values(rows, y)
    return xs, ys, np.array([[_metric([r for r in rows if r[x] == a and r[y] == b], metric) for a in xs]
                             for b in ys])


def default_metric(rows) -> str:
    if any(r.get("iteration_mean_ns") for r in rows):
        return "iteration_mean_ns"
    return "slowdown_p99"


def plot_sweep(root, out_path=None, metric=None, x=None, by=None) -> str:
    """`metric` against the swept parameter `x`, a line per value of `by` (default
    cc.scheme when swept); with nothing left to put on x, a bar per value of `by`."""
    rows, params = read_done(root)
    metric = metric or default_metric(rows)
    if metric not in METRIC_COLUMNS:
        raise ValueError(f"unknown metric {metric!r}; valid: {', '.join(METRIC_COLUMNS)}")
    for k in (x, by):
        if k is not None and k not in params:
            raise ValueError(f"{k!r} is not a swept parameter; swept: {', '.join(params)}")
    free = [p for p in params if p != "seed"]
    if by is None:
        by = "cc.scheme" if "cc.scheme" in free and x != "cc.scheme" else None
    if x is None:                 # a parameter crossed with `by` (not one varied together with it)
        rest = [p for p in free if p != by and _crossed(rows, p, by)]
        x = rest[0] if rest else None
    out_path = out_path or os.path.join(root, f"{metric}.png")
    averaged = [p for p in params if p not in (x, by)]
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    label = LABELS.get(metric, metric)
    if not rows:
        ax.text(0.5, 0.5, "no completed runs in this sweep", ha="center", va="center", transform=ax.transAxes)
    elif x is None:                     # a bar per configuration (the swept values but seeds)
        keys = list(dict.fromkeys(tuple(r[p] for p in free) for r in rows))
        labels = [", ".join(v if p == (by or free[0]) else f"{p}={v}" for p, v in zip(free, k) if v != "") or "base"
                  for k in keys]
        heights = [_metric([r for r in rows if tuple(r[p] for p in free) == k], metric) for k in keys]
        zoomed_bars(ax, labels, heights)
        averaged = [p for p in params if p not in free]
        ax.set_xlabel(", ".join(free) or "run")
    else:
        xs, lines = series(rows, metric, x, by)
        numeric = _numeric(xs)
        for k, (g, ys) in enumerate(lines.items()):
            ax.plot([float(v) for v in xs] if numeric else np.arange(len(xs)), ys, LINESTYLES[k % 4],
                    marker=MARKERS[k % len(MARKERS)], color=f"C{k % 10}", label=g if g is not None else label)
        if not numeric:
            ax.set_xticks(np.arange(len(xs)), xs)
        elif len(xs) <= 12:
            ax.set_xticks([float(v) for v in xs], xs)
        ax.set_xlabel(x)
        ax.legend(fontsize=8, title=by)
        plain_axis(ax.yaxis)
    ax.set_ylabel(label)
    ax.set_title(f"{os.path.basename(os.path.normpath(root))}: {label}" +
                 (f" (mean over {', '.join(averaged)})" if averaged and rows else ""), fontsize=10)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)
    plt.close(fig)
    return out_path


def plot_heatmap(root, x, y, out_path=None, metric=None) -> str:
    """`metric` over two swept parameters (mean over the others), values written in the cells."""
    rows, params = read_done(root)
    metric = metric or default_metric(rows)
    for k in (x, y):
        if k not in params:
            raise ValueError(f"{k!r} is not a swept parameter; swept: {', '.join(params)}")
    xs, ys, values = grid(rows, metric, x, y)
    out_path = out_path or os.path.join(root, f"{metric}-{x}-{y}.png")
    fig, ax = plt.subplots(figsize=(1.1 * len(xs) + 3, 0.5 * len(ys) + 2.5))
    label = LABELS.get(metric, metric)
    if not rows:
        ax.text(0.5, 0.5, "no completed runs in this sweep", ha="center", va="center", transform=ax.transAxes)
    else:
        im = ax.imshow(values, aspect="auto", cmap="viridis", origin="lower")
        fig.colorbar(im, ax=ax, label=label)
        for i in range(len(ys)):
            for j in range(len(xs)):
                if not np.isnan(values[i, j]):
                    ax.text(j, i, f"{values[i, j]:.3g}", ha="center", va="center", fontsize=8,
                            color="white" if values[i, j] < np.nanmean(values) else "black")
        ax.set_xticks(np.arange(len(xs)), xs)
        ax.set_yticks(np.arange(len(ys)), ys)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    averaged = [p for p in params if p not in (x, y)]
    ax.set_title(f"{label}" + (f" (mean over {', '.join(averaged)})" if averaged else ""), fontsize=10)
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)
    plt.close(fig)
    return out_path


def _crossed(rows, x, by) -> bool:
    """Whether every value of `by` was run at two or more values of `x`."""
    if by is None:
        return len({r[x] for r in rows}) > 1
    return all(len({r[x] for r in rows if r[by] == g}) > 1 for g in {r[by] for r in rows})


def _numeric(values) -> bool:
    try:
        [float(v) for v in values]
        return True
    except ValueError:
        return False
