"""Tail-latency metrics over flow results: FCT slowdown by flow-size bin, percentiles.

The binning follows the HPCC paper's analysis: sort the finished flows by size and
split them into `n_bins` bins of equal flow count; report the 50th, 95th and 99th
percentile of slowdown per bin, with the bin's largest flow size as its label.
"""
from __future__ import annotations

import numpy as np

PERCENTILES = (50, 95, 99)


def slowdown_by_size(size_bytes, slowdown, n_bins: int = 20) -> dict:
    """Per-bin size label and slowdown percentiles of the finished flows.

    Returns a dict of arrays: `size_max` (largest size in the bin), `size_median`,
    `count`, and `p50`, `p95`, `p99`.  Flows with NaN slowdown (unfinished) are left out.
    """
    size = np.asarray(size_bytes, np.float64)
    sd = np.asarray(slowdown, np.float64)
    keep = ~np.isnan(sd)
    size, sd = size[keep], sd[keep]
    order = np.argsort(size, kind="stable")
    size, sd = size[order], sd[order]
    n_bins = max(1, min(n_bins, size.size))
    out = {k: [] for k in ("size_max", "size_median", "count") + tuple(f"p{p}" for p in PERCENTILES)}
    for idx in np.array_split(np.arange(size.size), n_bins):
        if idx.size == 0:
            continue
        out["size_max"].append(size[idx[-1]])
        out["size_median"].append(np.median(size[idx]))
        out["count"].append(idx.size)
        for p, v in zip(PERCENTILES, np.percentile(sd[idx], PERCENTILES)):
            out[f"p{p}"].append(v)
    return {k: np.asarray(v) for k, v in out.items()}


def format_bins(bins: dict) -> str:
    """A plain-text table of `slowdown_by_size` output."""
    lines = [f"{'size<=':>12} {'flows':>6} {'p50':>8} {'p95':>8} {'p99':>8}"]
    for i in range(len(bins["size_max"])):
        lines.append(f"{int(bins['size_max'][i]):>12} {int(bins['count'][i]):>6} "
                     f"{bins['p50'][i]:>8.2f} {bins['p95'][i]:>8.2f} {bins['p99'][i]:>8.2f}")
    return "\n".join(lines)


def paused_links(timeline, times_ns, end_ns=None) -> np.ndarray:
    """How many transmitters (ports) are paused, at any priority, at each of `times_ns`,
    from the columns of pfc_timeline.csv (a pause still on at the end lasts until `end_ns`,
    or for ever)."""
    port = np.asarray(timeline["port"], np.int64)
    start = np.asarray(timeline["pause_start_ns"], float)
    end = np.asarray(timeline["pause_end_ns"], float)
    end = np.where(np.isnan(end), np.inf if end_ns is None else end_ns, end)
    times = np.asarray(times_ns, float)
    on = (start[None, :] <= times[:, None]) & (times[:, None] < end[None, :])     # [t, interval]
    out = np.empty(len(times), np.int64)
    for k in range(len(times)):
        out[k] = np.unique(port[on[k]]).size
    return out
