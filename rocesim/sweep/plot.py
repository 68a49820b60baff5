"""Figures of a sweep folder's index.csv: a metric against a swept parameter, one line
per scheme (or bars when the scheme is the only parameter), and a heatmap over two; and a
metric of separate run folders, a bar per folder (`plot_folders`), as a sweep's bars.

Seeds, and any other swept parameter not drawn, are averaged over (the title says so),
and their spread is drawn: a min-max band around each line, min-max error bars on each
bar, the range under each heatmap cell's mean.  Axes name metrics and parameters in words
with units (`rocesim.sweep.index`), legends sit beside the axes, not on the data, and an
axis that does not start at zero says so.  Runs that failed or are missing are left out.
"""
from __future__ import annotations

import os

import numpy as np

from rocesim.results.axes import TRUNCATED, plain_axis, plt, seed_labels, zoomed_bars
from rocesim.results.plot import configuration_label
import rocesim.sweep.index as index
from rocesim.sweep.index import default_metrics, parameter_label, read_done, read_folders

def _values(rows, key):
    """The distinct values of a column in first-seen order, sorted numerically if numbers."""
    seen = list(dict.fromkeys(r[key] for r in rows))
    try:
        return sorted(seen, key=float)
    except ValueError:
        return seen


def _samples(rows, name) -> list[float]:
    m = index.metric(name)
    return [float(r[name]) * m.scale for r in rows if r.get(name, "") != ""]


def _metric(rows, name):
    """Mean of the runs' values, scaled for display (NaN with none)."""
    vals = _samples(rows, name)
    return np.mean(vals) if vals else np.nan


def _range(rows, name) -> tuple[float, float]:
    vals = _samples(rows, name)
    return (min(vals), max(vals)) if vals else (np.nan, np.nan)


LINESTYLES = ("-", "--", "-.", ":")
MARKERS = "os^Dv<>p"          # lines that coincide stay visible


def series(rows, metric, x, by=None) -> tuple[list, dict]:
    """(x values, {value of `by` (None without): mean metric at each x value}), scaled
    for display (ms for times); missing combinations are NaN."""
    xs, lines, _ = series_with_range(rows, metric, x, by)
    return xs, lines


def series_with_range(rows, metric, x, by=None) -> tuple[list, dict, dict]:
    """As `series`, plus {value of `by`: (min at each x, max at each x)} over the runs
    averaged into each point."""
    xs = _values(rows, x)
    lines, spread = {}, {}
    for g in (_values(rows, by) if by else [None]):
        sel = [r for r in rows if by is None or r[by] == g]
        at = [[r for r in sel if r[x] == v] for v in xs]
        lines[g] = [_metric(a, metric) for a in at]
        lo_hi = [_range(a, metric) for a in at]
        spread[g] = ([lo for lo, _ in lo_hi], [hi for _, hi in lo_hi])
    return xs, lines, spread


def grid(rows, metric, x, y) -> tuple[list, list, np.ndarray]:
    """(x values, y values, mean metric [y, x]) for a heatmap."""
    xs, ys = _values(rows, x), _values(rows, y)
    return xs, ys, np.array([[_metric([r for r in rows if r[x] == a and r[y] == b], metric) for a in xs]
                             for b in ys])


def default_metric(rows) -> str:
    """Iteration time for training runs, else the p99 FCT slowdown."""
    return default_metrics(rows)[0] if any(r.get("iteration_mean_ns") for r in rows) else "slowdown_p99"


def mark_truncated(ax) -> None:
    """Say so on a linear value axis that does not start at zero."""
    lo, hi = ax.get_ylim()
    if ax.get_yscale() == "linear" and lo > 0 and not any(TRUNCATED in t.get_text() for t in ax.texts):
        ax.text(0.01, 0.99, TRUNCATED, transform=ax.transAxes, ha="left", va="top", fontsize=7, color="0.35")


def plot_sweep(root, out_path=None, metric=None, x=None, by=None) -> str:
    """`metric` against the swept parameter `x`, a line per value of `by` (default
    cc.scheme when swept), each with the min-max band of the runs averaged into it; with
    nothing left to put on x, a bar per value of `by` with min-max error bars."""
    rows, params = read_done(root)
    metric = metric or default_metric(rows)
    label = index.metric(metric).label               # unknown: ValueError listing the valid ones
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
    fig, ax = plt.subplots(figsize=(8.5, 4.5))
    if not rows:
        ax.text(0.5, 0.5, "no completed runs in this sweep", ha="center", va="center", transform=ax.transAxes)
    elif x is None:                     # a bar per configuration (the swept values but seeds)
        keys = list(dict.fromkeys(tuple(r[p] for p in free) for r in rows))
        labels = [", ".join(v if p == (by or free[0]) else f"{p}={v}" for p, v in zip(free, k) if v != "") or "base"
                  for k in keys]
        groups = [[r for r in rows if tuple(r[p] for p in free) == k] for k in keys]
        zoomed_bars(ax, labels, [_metric(g, metric) for g in groups],
                    spread=[_range(g, metric) for g in groups] if any(len(g) > 1 for g in groups) else None)
        averaged = [p for p in params if p not in free]
        ax.set_xlabel(", ".join(map(parameter_label, free)) or "run")
    else:
        xs, lines, spread = series_with_range(rows, metric, x, by)
        numeric = _numeric(xs)
        at = [float(v) for v in xs] if numeric else np.arange(len(xs))
        for k, (g, ys) in enumerate(lines.items()):
            color = f"C{k % 10}"
            ax.plot(at, ys, LINESTYLES[k % 4], marker=MARKERS[k % len(MARKERS)], color=color,
                    label=g if g is not None else label)
            lo, hi = spread[g]
            if any(a != b for a, b in zip(lo, hi) if not np.isnan(a)):
                ax.fill_between(at, lo, hi, color=color, alpha=0.15, lw=0)
        if not numeric:
            ax.set_xticks(np.arange(len(xs)), xs)
        elif len(xs) <= 12:
            ax.set_xticks([float(v) for v in xs], xs)
        ax.set_xlabel(parameter_label(x))
        ax.legend(fontsize=8, title=parameter_label(by) if by else None, loc="upper left",
                  bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
        plain_axis(ax.yaxis)
        mark_truncated(ax)
    ax.set_ylabel(label)
    spread_note = "; band or bars: min-max" if any(p == "seed" for p in averaged) else ""
    ax.set_title(f"{os.path.basename(os.path.normpath(root))}: {label}" +
                 (f"\n(mean over {', '.join(map(parameter_label, averaged))}{spread_note})" if averaged and rows else ""),
                 fontsize=10)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)
    plt.close(fig)
    return out_path


def plot_folders(folders, out_path=None, metric=None) -> str:
    """`metric` (default as for a sweep: `default_metric`) of separate results folders, a bar
    per folder, drawn as a sweep's bars (`zoomed_bars`).  A sweep's runs of one configuration
    at several seeds (folders of one parent whose names differ only by `seed=N`:
    `configuration_label`) are one bar, the mean of their values with min-max whiskers, and
    the figure says which differences are within that spread.  Default path:
    <first folder>/<metric>.png."""
    rows = read_folders(folders)
    metric = metric or default_metric(rows)
    label = index.metric(metric).label               # unknown: ValueError listing the valid ones
    keys = [(os.path.dirname(os.path.normpath(d)), configuration_label(d)) for d in folders]
    shown = [k[1] for k in keys]
    groups = {}
    for key, row in zip(keys, rows):
        name = key[1] if shown.count(key[1]) == keys.count(key) else os.path.join(*key)
        groups.setdefault(name, []).append(row)
    out_path = out_path or os.path.join(folders[0], f"{metric}.png")
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(groups) + 3), 4.5))
    seeds = any(len(g) > 1 for g in groups.values())
    labels, each = seed_labels(list(groups), [len(g) for g in groups.values()])
    zoomed_bars(ax, labels, [_metric(g, metric) for g in groups.values()],
                spread=[_range(g, metric) for g in groups.values()] if seeds else None)
    ax.set_ylabel(label)
    ax.set_title(f"{label}\n(a bar per run folder" + ("; seeds of one configuration: mean, min-max" if seeds else "")
                 + (f", {each}" if each else "") + ")", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)
    plt.close(fig)
    return out_path


def plot_heatmap(root, x, y, out_path=None, metric=None) -> str:
    """`metric` over two swept parameters (mean over the others), values written in the
    cells with the min-max of the runs behind them underneath."""
    rows, params = read_done(root)
    metric = metric or default_metric(rows)
    label = index.metric(metric).label
    for k in (x, y):
        if k not in params:
            raise ValueError(f"{k!r} is not a swept parameter; swept: {', '.join(params)}")
    xs, ys, values = grid(rows, metric, x, y)
    out_path = out_path or os.path.join(root, f"{metric}-{x}-{y}.png")
    fig, ax = plt.subplots(figsize=(1.3 * len(xs) + 3, 0.6 * len(ys) + 2.5))
    if not rows:
        ax.text(0.5, 0.5, "no completed runs in this sweep", ha="center", va="center", transform=ax.transAxes)
    else:
        im = ax.imshow(values, aspect="auto", cmap="viridis", origin="lower")
        fig.colorbar(im, ax=ax, label=label)
        for i in range(len(ys)):
            for j in range(len(xs)):
                if not np.isnan(values[i, j]):
                    lo, hi = _range([r for r in rows if r[x] == xs[j] and r[y] == ys[i]], metric)
                    text = f"{values[i, j]:.3g}" + (f"\n{lo:.3g}-{hi:.3g}" if hi > lo else "")
                    ax.text(j, i, text, ha="center", va="center", fontsize=7,
                            color="white" if values[i, j] < np.nanmean(values) else "black")
        ax.set_xticks(np.arange(len(xs)), xs)
        ax.set_yticks(np.arange(len(ys)), ys)
    ax.set_xlabel(parameter_label(x))
    ax.set_ylabel(parameter_label(y))
    averaged = [p for p in params if p not in (x, y)]
    ax.set_title(f"{label}" + (f"\n(mean over {', '.join(map(parameter_label, averaged))}; "
                               f"under it: min-max)" if averaged else ""), fontsize=10)
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
