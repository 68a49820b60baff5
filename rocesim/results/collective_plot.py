"""Collectives by communicator, fabric, operation and size: duration and bus bandwidth
(collectives.csv).

A line joins the collectives of one kind only: the same operation on communicators of the
same size over the same fabric (and of the same job), so that an 8-GPU all-reduce over the
scale-up domain and a 2-rank all-reduce over the network are two lines, not one size trend.
A colour per communicator (size, fabric, job), a marker per operation, hollow markers for
the scale-up domain, a line style per run.  The fabric comes from flows.csv
(`rocesim.results.metrics.collective_fabric`); without it the lines say nothing of it.
Bus bandwidth is nccl-tests' figure (`rocesim.results.metrics.bandwidths_gbps`).
"""
from __future__ import annotations

import numpy as np

from rocesim.results.metrics import FABRICS, bandwidths_gbps, collective_fabric
from rocesim.results.axes import plain_axis, plt, size_axis

MARKERS = "os^Dv<>p"
RUN_STYLES = ("-", "--", "-.", ":")


def communicators(coll, flows=None) -> list[tuple]:
    """Per collective: (job, ranks, fabric) of its communicator, fabric None without `flows`."""
    ranks = np.asarray(coll["ranks"], float).astype(np.int64)
    jobs = np.asarray(coll["job"]).astype(str) if "job" in coll else np.full(ranks.size, "")
    jobs = np.where(jobs == "nan", "", jobs)                    # an empty cell read back
    fabric = collective_fabric(coll, flows) if flows is not None and "collective" in flows else [None] * ranks.size
    return list(zip(jobs, ranks, fabric))


def kind_label(job, ranks, fabric, op, jobs_shown) -> str:
    """'allreduce, 8 ranks, scale-up' (the job first when the runs hold several)."""
    text = f"{op}, {ranks} rank{'s' if ranks != 1 else ''}" + (f", {fabric}" if fabric else "")
    return f"{job or '(no job)'}: {text}" if jobs_shown else text


def plot_collectives(runs, out_path, title=None) -> str:
    """`runs`: a list of (label, collectives columns, flows columns or None).  Duration and
    bus bandwidth against size, a line per kind of collective (operation, communicator size,
    fabric, job; medians over repeats): see the module docstring."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.8))
    groups, ops_seen = {}, {}
    kinds = [communicators(coll, flows) for _, coll, flows in runs]
    jobs_shown = len({job for k in kinds for job, _, _ in k}) > 1
    for r, ((label, coll, _), comm) in enumerate(zip(runs, kinds)):
        ops = np.asarray(coll["op"]).astype(str)
        size = np.asarray(coll["size_bytes"], float)
        dur = np.asarray(coll["duration_ns"], float) / 1e3
        bw = bandwidths_gbps(coll)[1]
        index = {}                                          # (communicator, op) -> its number in this run
        kind_of = np.array([index.setdefault(k, len(index)) for k in zip(comm, ops)], np.int64)
        for (c, op), k in index.items():
            color = f"C{groups.setdefault(c, len(groups)) % 10}"
            marker = ops_seen.setdefault(op, MARKERS[len(ops_seen) % len(MARKERS)])
            sel = (kind_of == k) & ~np.isnan(dur)
            sizes = np.unique(size[sel])
            if not sizes.size:
                continue
            med_d = [np.median(dur[sel & (size == s)]) for s in sizes]
            med_b = [np.median(bw[sel & (size == s)]) for s in sizes]
            name = kind_label(*c, op, jobs_shown)
            name = f"{label}: {name}" if len(runs) > 1 else name
            style = dict(marker=marker, color=color, linestyle=RUN_STYLES[r % len(RUN_STYLES)], label=name,
                         fillstyle="none" if c[2] == FABRICS[1] else "full")
            ax1.plot(sizes, med_d, **style)
            ax2.plot(sizes, med_b, **style)
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
        ax2.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0,
                   title="hollow: scale-up domain" if any(c[2] == FABRICS[1] for c in groups) else None,
                   title_fontsize=7)
    ax1.set_ylabel("duration (us, median)")
    ax1.set_title("collective duration", fontsize=10)
    ax2.set_ylabel("bus bandwidth (Gb/s, median)")
    ax2.set_title("bus bandwidth (nccl-tests)", fontsize=10)
    fig.suptitle(title or "collectives by communicator, fabric, operation and size")
    fig.tight_layout()
    fig.savefig(out_path, dpi=100)
    plt.close(fig)
    return out_path
