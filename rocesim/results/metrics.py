"""Metrics over a run's results: FCT slowdown by flow-size bin, and the summary's
per-class figures (all network flows, background flows, collectives, iterations).

The binning follows the HPCC paper's analysis: sort the finished flows by size and
split them into bins of equal flow count; report the 50th, 95th and 99th percentile of
slowdown per bin, with the bin's largest flow size as its label.  Unless told, the number
of bins follows the number of flows (`size_bins`): a p99 needs about fifty flows to be
more than a bin's largest value.

Classes of flows (OUTPUTS.md gives the same definitions):
* network flows: every flow that is not a compute step;
* background flows: network flows that belong to no collective and no training
  iteration (the `flows`, `incast`, `permutation`, `cdf` and HPCC-file traffic entries,
  and `Simulation.add_flow`); comparing schemes on training traffic reads these, since a
  collective's chunk flows are many, alike and short-lived, and pull the percentiles of
  all network flows towards their own;
* collectives and iterations: rows of collectives.csv and iterations.csv, measured by
  their duration (first start to last byte delivered), not by per-flow slowdown.
"""
from __future__ import annotations

import numpy as np

PERCENTILES = (50, 95, 99)
# the fewest flows a size bin holds when the bins are chosen from the flow count: the p99 of
# 8 flows is their maximum (20 bins of the quickstart's 162 flows zig-zag from bin to bin);
# of 50 it lies between the two largest, as close to a percentile as a bin can say
MIN_FLOWS_PER_BIN = 50
MAX_BINS = 20


def size_bins(n_flows: int) -> int:
    """How many equal-count size bins `n_flows` finished flows are split into: as many as
    keep at least MIN_FLOWS_PER_BIN flows in each, at most MAX_BINS, at least one."""
    return int(max(1, min(MAX_BINS, n_flows // MIN_FLOWS_PER_BIN)))


def slowdown_by_size(size_bytes, slowdown, n_bins: int | None = None) -> dict:
    """Per-bin size label and slowdown percentiles of the finished flows, in `n_bins`
    bins of equal flow count (None: `size_bins` of the finished flows).

    Returns a dict of arrays: `size_max` (largest size in the bin), `size_median`,
    `count`, and `p50`, `p95`, `p99`.  Flows with NaN slowdown (unfinished) are left out.
    """
    size = np.asarray(size_bytes, np.float64)
    sd = np.asarray(slowdown, np.float64)
    keep = ~np.isnan(sd)
    size, sd = size[keep], sd[keep]
    order = np.argsort(size, kind="stable")
    size, sd = size[order], sd[order]
    n_bins = max(1, min(size_bins(size.size) if n_bins is None else n_bins, size.size))
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


def bus_factor(op: str, n: int) -> float:
    """nccl-tests' bus-bandwidth factor of a collective over `n` ranks: the share of the
    data each rank's link must carry whatever the algorithm, 2(n-1)/n for an all-reduce,
    (n-1)/n for reduce-scatter, all-gather and all-to-all, 1 for broadcast, reduce and
    send/receive (nccl-tests' doc/PERFORMANCE.md), so that bus bandwidth compares with
    the link rate."""
    if n <= 1:
        return 1.0
    if op == "allreduce":
        return 2.0 * (n - 1) / n
    if op in ("reducescatter", "allgather", "alltoall"):
        return (n - 1) / n
    return 1.0


def bandwidths_gbps(collectives) -> tuple[np.ndarray, np.ndarray]:
    """Per collective: (algorithm bandwidth, bus bandwidth) in Gb/s, as nccl-tests defines
    them (algbw = size / duration; busbw = algbw x bus_factor; nccl-tests prints GB/s, 8x
    less); NaN if unfinished."""
    size = np.asarray(collectives["size_bytes"], float)
    dur = np.asarray(collectives["duration_ns"], float)
    ops, op_of = np.unique(np.asarray(collectives["op"]).astype(str), return_inverse=True)
    ranks, ranks_of = np.unique(np.asarray(collectives["ranks"], np.int64), return_inverse=True)
    kinds, kind_of = np.unique(op_of * len(ranks) + ranks_of, return_inverse=True)   # (op, ranks) pairs
    factor = np.array([bus_factor(str(ops[k // len(ranks)]), int(ranks[k % len(ranks)])) for k in kinds],
                      float)[kind_of.ravel()]
    with np.errstate(invalid="ignore", divide="ignore"):
        alg = 8 * size / dur                    # bytes per ns x 8 = Gb/s
    return alg, alg * factor


FABRICS = ("network", "scale-up", "none")


def collective_fabric(collectives, flows) -> np.ndarray:
    """Per collective (a row of collectives.csv), what its data crossed: "network" when a
    data flow of it (flows.csv's `collective`) crossed the network, "scale-up" when none did
    but it had bytes to move among two ranks or more (on a multi-GPU platform, a collective
    inside one server: its transfers are fluid scale-up steps, compute nodes), else "none"
    (one rank, or no bytes)."""
    ids = np.asarray(collectives["collective_id"], np.int64)
    of = np.asarray(flows["collective"], np.int64)
    net = of[~np.asarray(flows["is_compute"]).astype(bool) & (of >= 0)]
    crossed = np.zeros(max(int(ids.max(initial=-1)), int(net.max(initial=-1))) + 1, bool)
    crossed[net] = True
    moved = (np.asarray(collectives["ranks"], float) > 1) & (np.asarray(collectives["size_bytes"], float) > 0)
    return np.where(crossed[ids], FABRICS[0], np.where(moved, FABRICS[1], FABRICS[2]))


def background_mask(flows) -> np.ndarray:
    """The network flows that belong to no collective and no training iteration."""
    mask = ~np.asarray(flows["is_compute"]).astype(bool)
    for col in ("collective", "iteration"):
        if col in flows:
            mask &= np.asarray(flows[col]) < 0
    return mask


def percentiles(prefix: str, values, suffix: str = "", ps=PERCENTILES, with_max=True) -> dict:
    """{prefix_p50suffix: ..., ..., prefix_maxsuffix: ...} of the finite `values`, rounded to
    4 decimals; every value None when there is none (JSON null, an empty cell)."""
    v = np.asarray(values, np.float64)
    v = v[np.isfinite(v)]
    keys = [f"{prefix}_p{p}{suffix}" for p in ps] + ([f"{prefix}_max{suffix}"] if with_max else [])
    if v.size == 0:
        return dict.fromkeys(keys)
    vals = list(np.percentile(v, ps)) + ([v.max()] if with_max else [])
    return {k: round(float(x), 4) for k, x in zip(keys, vals)}


def class_summary(flows, collectives=None, iterations=None) -> dict:
    """The summary's metrics by class (see the module docstring and OUTPUTS.md):
    slowdown of all network flows and of background flows, collective durations,
    iteration times; counts of each class and how many finished."""
    network = ~np.asarray(flows["is_compute"]).astype(bool)
    background = background_mask(flows)
    slowdown = np.asarray(flows["slowdown"], np.float64)
    out = percentiles("slowdown", slowdown[network])
    out["background_flows"] = int(background.sum())
    out.update(percentiles("background_slowdown", slowdown[background]))
    if collectives is not None:
        d = np.asarray(collectives["duration_ns"], np.float64)
        out.update(collectives=int(d.size), collectives_completed=int(np.isfinite(d).sum()))
        out.update(percentiles("collective_duration", d, "_ns", ps=(50, 99), with_max=False))
    if iterations is not None:
        d = np.asarray(iterations["duration_ns"], np.float64)
        done = d[np.isfinite(d)]
        out.update(iterations=int(d.size), iterations_completed=int(done.size),
                   iteration_mean_ns=round(float(done.mean()), 4) if done.size else None)
        out.update(percentiles("iteration", d, "_ns", ps=(99,), with_max=False))
    return out


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


def uplink_imbalance(tx_bytes, port_tier) -> tuple[float | None, dict]:
    """How unevenly each tier of the fabric loads its uplinks: per tier (a switch's ports
    towards the next tier up: 1 the ToRs', 2 the aggregations' ...; `port_tier` 0 for every
    other port), the busiest uplink's bytes over the mean of the tier's uplinks (1.0: even;
    a tier that sent nothing has none); returns (the worst tier's figure, {tier: figure})."""
    tx, tier = np.asarray(tx_bytes, np.float64), np.asarray(port_tier)
    by_tier = {}
    for t in np.unique(tier[tier > 0]):
        sent = tx[tier == t]
        if sent.sum() > 0:
            by_tier[int(t)] = round(float(sent.max() / sent.mean()), 4)
    return (max(by_tier.values()) if by_tier else None), by_tier
