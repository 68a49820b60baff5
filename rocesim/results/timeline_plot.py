"""Rates and queues over time, from the sampled rates.csv and queues.csv
(`output.sample_interval`): the senders' rates and delivered throughput above, the
switch egress queues below, on one time axis.  With many flows or ports, those that
sent the most (or queued the most) are drawn and the title says how many were left out.
"""
from __future__ import annotations

import numpy as np

from rocesim.results.axes import plain_axis, plt

MAX_LINES = 8


def _top(keys, weights, n):
    ids = np.unique(keys)
    total = np.array([weights[keys == k].sum() for k in ids])
    return ids[np.argsort(-total, kind="stable")[:n]], len(ids)


def plot_timeline(rates, queues, out_path, title=None, max_lines=MAX_LINES) -> str:
    """`rates`, `queues`: the columns of rates.csv and queues.csv (either may be None)."""
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True)
    if rates is not None and len(rates["flow_id"]):
        t = np.asarray(rates["time_ns"], float) / 1e3
        fid = np.asarray(rates["flow_id"], np.int64)
        thr = np.asarray(rates["throughput_bps"], float) / 1e9
        flows, n = _top(fid, thr, max_lines)
        for k, f in enumerate(flows):
            sel = fid == f
            ax1.plot(t[sel], np.asarray(rates["rate_bps"], float)[sel] / 1e9, "--", color=f"C{k % 10}", lw=0.9)
            ax1.plot(t[sel], thr[sel], "-", color=f"C{k % 10}", lw=1.2, label=f"flow {f}")
        ax1.legend(fontsize=7, ncol=2, title="solid: delivered, dashed: sender rate", title_fontsize=7)
        ax1.set_title(f"flows{f' (the {len(flows)} of {n} that delivered most)' if n > len(flows) else ''}",
                      fontsize=9)
    else:
        ax1.text(0.5, 0.5, "no rates sampled", ha="center", va="center", transform=ax1.transAxes)
    ax1.set_ylabel("Gb/s")
    plain_axis(ax1.yaxis)
    if queues is not None and len(queues["port"]):
        t = np.asarray(queues["time_ns"], float) / 1e3
        port = np.asarray(queues["port"], np.int64)
        q = np.asarray(queues["queue_bytes"], float) / 1e3
        ports, n = _top(port, q, max_lines)
        node = np.asarray(queues["node"], np.int64)
        for k, p in enumerate(ports):
            sel = port == p
            ax2.plot(t[sel], q[sel], "-", color=f"C{k % 10}", lw=1.2, label=f"port {p} (switch {node[sel][0]})")
        ax2.legend(fontsize=7, ncol=2)
        ax2.set_title(f"switch egress queues{f' (the {len(ports)} of {n} that queued most)' if n > len(ports) else ''}",
                      fontsize=9)
    else:
        ax2.text(0.5, 0.5, "no queues sampled", ha="center", va="center", transform=ax2.transAxes)
    ax2.set_ylabel("queue (KB)")
    ax2.set_xlabel("time (us)")
    plain_axis(ax2.yaxis)
    plain_axis(ax2.xaxis)
    for ax in (ax1, ax2):
        ax.grid(True, alpha=0.3)
    fig.suptitle(title or "rates and queues over time")
    fig.tight_layout()
    fig.savefig(out_path, dpi=100)
    plt.close(fig)
    return out_path
