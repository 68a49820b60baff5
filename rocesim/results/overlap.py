"""Where a training iteration's time goes: compute, communication hidden behind compute
(overlap), and communication that is not (exposed).

Per host and iteration, over the iteration's window: C is the union of the host's compute
steps, M the union of the times a flow of the iteration that the host sends or receives
is in flight (start to last byte delivered).  compute = |C|, overlap = |C and M|,
exposed communication = |M| - overlap; the rest of the window the host waits (for
dependencies on other hosts).  The iteration's figures are means over the hosts that
compute in it.
"""
from __future__ import annotations

import numpy as np


def union_length(start, end) -> float:
    """Total length covered by the intervals [start, end)."""
    if len(start) == 0:
        return 0.0
    order = np.argsort(start, kind="stable")
    s, e = np.asarray(start, float)[order], np.maximum.accumulate(np.asarray(end, float)[order])
    gaps = np.maximum(0.0, s[1:] - e[:-1])           # uncovered stretches between merged runs
    return float(e[-1] - s[0] - gaps.sum())


def iteration_breakdown(flows, iterations) -> dict:
    """Per row of `iterations` (columns of iterations.csv): `compute_ns`, `overlap_ns` and
    `exposed_comm_ns`, means over the hosts that compute in the iteration (NaN if none)."""
    it = np.asarray(flows["iteration"])
    comp = np.asarray(flows["is_compute"], bool)
    start = np.asarray(flows["start_ns"], float)
    length = np.where(comp, flows["fct_ns"], flows["rx_fct_ns"]).astype(float)
    out = {k: np.full(len(iterations["iteration"]), np.nan) for k in ("compute_ns", "overlap_ns", "exposed_comm_ns")}
    for row, (i, t0, t1) in enumerate(zip(iterations["iteration"], iterations["start_ns"], iterations["finish_ns"])):
        sel = (it == i) & ~np.isnan(start)
        if not sel.any():
            continue                              # never started (the run stopped first)
        t1 = t1 if np.isfinite(t1) else np.max(start[sel] + np.nan_to_num(length[sel]))
        s = np.clip(start[sel], t0, t1)
        e = np.clip(np.where(np.isnan(length[sel]), t1, start[sel] + length[sel]), t0, t1)   # unfinished: to the end
        c = comp[sel]
        src, dst = np.asarray(flows["src"])[sel], np.asarray(flows["dst"])[sel]
        # (host, start, end, is compute): a compute step once, a flow for both its ends
        host = np.concatenate([src[c], src[~c], dst[~c]])
        ss = np.concatenate([s[c], s[~c], s[~c]])
        ee = np.concatenate([e[c], e[~c], e[~c]])
        kind = np.concatenate([np.ones(c.sum(), bool), np.zeros(2 * (~c).sum(), bool)])
        del s, e, c, src, dst, sel                # (a node's worth each: a large run's peak is here)
        order = np.argsort(host, kind="stable")
        host, kind = host[order], kind[order]
        ss = ss[order]
        ee = ee[order]
        del order
        bounds = np.flatnonzero(np.diff(host)) + 1
        per_host = []
        for h_s, h_e, h_k in zip(np.split(ss, bounds), np.split(ee, bounds), np.split(kind, bounds)):
            if not h_k.any():
                continue                          # a host that only forwards: not a rank here
            busy_c = union_length(h_s[h_k], h_e[h_k])
            busy_m = union_length(h_s[~h_k], h_e[~h_k])
            both = busy_c + busy_m - union_length(h_s, h_e)
            per_host.append((busy_c, both, busy_m - both))
        if per_host:
            cm, ov, ex = np.mean(per_host, axis=0)
            out["compute_ns"][row], out["overlap_ns"][row], out["exposed_comm_ns"][row] = cm, ov, ex
    return out
