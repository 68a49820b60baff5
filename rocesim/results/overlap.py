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


def _by_host(host, rows, n_hosts) -> tuple[np.ndarray, np.ndarray]:
    """`rows` grouped by `host` (in their order within a host), and where each host's start
    (n_hosts + 1 bounds)."""
    order = np.argsort(host, kind="stable")
    return rows[order], np.concatenate([[0], np.cumsum(np.bincount(host, minlength=n_hosts))])


def iteration_breakdown(flows, iterations) -> dict:
    """Per row of `iterations` (columns of iterations.csv): `compute_ns`, `overlap_ns` and
    `exposed_comm_ns`, means over the hosts that compute in the iteration (NaN if none)."""
    it = np.asarray(flows["iteration"])
    comp = np.asarray(flows["is_compute"], bool)
    start = np.asarray(flows["start_ns"], float)
    out = {k: np.full(len(iterations["iteration"]), np.nan) for k in ("compute_ns", "overlap_ns", "exposed_comm_ns")}
    for row, (i, t0, t1) in enumerate(zip(iterations["iteration"], iterations["start_ns"], iterations["finish_ns"])):
        sel = (it == i) & ~np.isnan(start)
        if not sel.any():
            continue                              # never started (the run stopped first)
        s = start[sel]
        span = np.where(comp[sel], np.asarray(flows["fct_ns"])[sel], np.asarray(flows["rx_fct_ns"])[sel])
        t1 = t1 if np.isfinite(t1) else np.max(s + np.nan_to_num(span))
        e = s + span
        e[np.isnan(span)] = t1                    # unfinished: to the end
        del span
        np.clip(e, t0, t1, out=e)
        np.clip(s, t0, t1, out=s)
        c = comp[sel]
        computes, data = np.flatnonzero(c).astype(np.int32), np.flatnonzero(~c).astype(np.int32)
        # by host, the rows of s and e: its compute steps, the flows it sends, those it receives
        # (one column at a time: a large run's peak is here)
        src = np.asarray(flows["src"])[sel]
        n_hosts = int(max(src.max(), np.asarray(flows["dst"])[sel].max())) + 1
        parts = [_by_host(src[computes], computes, n_hosts), _by_host(src[data], data, n_hosts)]
        del src, computes
        parts.append(_by_host(np.asarray(flows["dst"])[sel][data], data, n_hosts))
        del sel, data
        per_host = []
        for h in range(n_hosts):
            mine = np.concatenate([rows[bounds[h]:bounds[h + 1]] for rows, bounds in parts])
            h_s, h_e, h_k = s[mine], e[mine], c[mine]
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
