"""Collectives by operation and size: duration and bus bandwidth (collectives.csv).

Bus bandwidth is nccl-tests' figure (`rocesim.results.metrics.bandwidths_gbps`).
"""
from __future__ import annotations

import numpy as np

from rocesim.results.metrics import bandwidths_gbps
from rocesim.results.axes import plain_axis, plt, size_axis

MARKERS = "os^Dv<>p"


def plot_collectives(runs, out_path, title=None) -> str:
    """`runs`: a list of (label, collectives columns).  Duration and bus bandwidth
    against size, a colour per run and a marker per operation (medians over repeats)."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.5))
    ops_seen = {}
    for k, (label, coll) in enumerate(runs):
        ops = np.asarray(coll["op"]).astype(str)
        size = np.asarray(coll["size_bytes"], float)
        dur = np.asarray(coll["duration_ns"], float) / 1e3
        bw = bandwidths_gbps(coll)[1]
        for op in dict.fromkeys(ops):
            m = ops_seen.setdefault(op, MARKERS[len(ops_seen) % len(MARKERS)])
            sel = (ops == op) & ~np.isnan(dur)
            sizes = np.unique(size[sel])
            if not sizes.size:
                continue
            med_d = [np.median(dur[sel & (size == s)]) for s in sizes]
            med_b = [np.median(bw[sel & (size == s)]) for s in sizes]
            name = f"{label}: {op}" if len(runs) > 1 else op
            ax1.plot(sizes, med_d, "-", marker=m, color=f"C{k % 10}", label=name)
            ax2.plot(sizes, med_b, "-", marker=m, color=f"C{k % 10}", label=name)
    if not ax1.lines:
        for ax in (ax1, ax2):
            ax.text(0.5, 0.5, "no finished collectives", ha="center", va="center", transform=ax.transAxes)
    else:
        for ax in (ax1, ax2):
            ax.set_xscale("log")
            size_axis(ax.xaxis)
            ax.set_xlabel("collective size")
            ax.grid(True, which="both", alpha=0.3)
        ax1.set_yscale("log")
        plain_axis(ax1.yaxis, log=True)
        plain_axis(ax2.yaxis)
        ax2.set_ylim(bottom=0)
        ax1.legend(fontsize=7)
    ax1.set_ylabel("duration (us, median)")
    ax1.set_title("collective duration", fontsize=10)
    ax2.set_ylabel("bus bandwidth (Gb/s, median)")
    ax2.set_title("bus bandwidth (nccl-tests)", fontsize=10)
    fig.suptitle(title or "collectives by operation and size")
    fig.tight_layout()
    fig.savefig(out_path, dpi=100)
    plt.close(fig)
    return out_path
