"""The dimensional and themis all-reduces: across the dimensions of a platform, in a fixed or
a load-balanced order.

A platform's ranks form a grid of dimensions, innermost first: the GPUs of a server
(the scale-up domain), the servers of a pod (one rail leaf per rail: each GPU with the
same-index GPU of the other servers), and the pods (across the spines). A
multi-dimensional all-reduce splits the buffer into `chunks` collective chunks; each
chunk reduce-scatters along the dimensions in some order (the first dimension moves the
whole chunk, each next one the 1/p_d left of it), then all-gathers along them in the
reverse order. Every stage is a ring among the ranks that differ only in that dimension.
A dimension works on one chunk at a time (ASTRA-sim's one active chunk per dimension);
which stage it serves next is decided up front by list scheduling on estimated stage
times (bytes over the dimension's rate per rank plus a hop's latency per ring step), and
the simulation then gives the actual times.

* `dimensional`: every chunk in the fixed order, innermost first (with one chunk on a 2-D
  platform it is exactly `hierarchical`).
* `themis`: the order is chosen per chunk, as in Themis (Rashidi et al., "Themis: a
  network bandwidth-aware collective scheduling policy for distributed training of DL
  models", ISCA 2022): a running estimate of each dimension's busy time (bytes over the
  dimension's rate per rank) is kept, and each chunk gives its largest stage to the
  least-loaded dimension, its next to the next least-loaded, and so on, so that the
  dimensions finish together instead of the slowest one holding the rest (here: the
  order, of all d! orders, that keeps the busiest dimension least busy; see
  `chunk_orders`).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np

from rocesim.errors import ScenarioError
from rocesim.training.algorithms.hierarchical import grouped_chunks
from rocesim.training.algorithms.registry import Algorithm, Plan, per_step
from rocesim.training.algorithms.ring import ring, ring_steps
from rocesim.training.chunks import split_bytes
from rocesim.training.transfers import Transfers

__all__ = ["Dimension", "platform_dimensions", "chunk_orders", "multidim_allreduce", "POLICIES", "DIMENSIONAL",
           "THEMIS"]

POLICIES = ("dimensional", "themis")


@dataclass(frozen=True)
class Dimension:
    """One dimension of the rank grid: its rings (rows of rank positions) and the rate at
    which one rank can send along it (bit/s), for the scheduler's load estimate."""

    name: str
    groups: np.ndarray
    rate_bps: float
    latency_s: float
    resource: str                  # what its sends go through: "scale-up" or "nic"

    def stage_s(self, nbytes: float) -> float:
        """Estimated time of a ring reduce-scatter or all-gather of `nbytes` along it."""
        return (self.size - 1) * (nbytes / self.size * 8 / self.rate_bps + self.latency_s)

    @property
    def size(self) -> int:
        return int(self.groups.shape[1])


def platform_dimensions(t: Transfers) -> list[Dimension]:
    """The dimensions of size > 1 of the ranks of `t`: GPU in
    server, server in pod, pod. The ranks must fill a full grid (every server the same
    local GPUs, every pod the same number of servers)."""
    pf, ranks = t.platform, t.ranks
    G = pf.gpus_per_server
    per_pod = max(1, pf.servers // max(1, pf.pods))
    coords = np.stack([pf.local[ranks], pf.server[ranks] % per_pod, pf.server[ranks] // per_pod])
    sizes = [np.unique(c).size for c in coords]
    if np.prod(sizes) != ranks.size:
        raise ScenarioError("ranks", "a dimensional or themis all-reduce needs ranks that fill a grid: the "
                                     "same GPUs in every server and the same number of servers in every pod")
    grid = np.full(sizes, -1, np.int64)
    index = [np.unique(c, return_inverse=True)[1] for c in coords]
    grid[index[0], index[1], index[2]] = np.arange(ranks.size)
    nic_share = float(pf.topology.host_rate(int(pf.host[ranks[0]]))) * pf.nics_per_server / G
    rates = [pf.scale_up.neighbour_bps(G) if pf.scale_up is not None else nic_share, nic_share,
             nic_share * pf.uplink_share]
    wire_s = float(pf.topology.delay_ab[pf.topology.host_link(int(pf.host[ranks[0]]))]) * 1e-12
    latencies = [pf.scale_up.delay_ps * 1e-12 if pf.scale_up is not None else 2 * wire_s, 2 * wire_s, 4 * wire_s]
    names = ("gpu in server", "server in pod", "pod")
    dims = []
    for d in range(3):
        if sizes[d] > 1:
            groups = np.moveaxis(grid, d, -1).reshape(-1, sizes[d])
            dims.append(Dimension(names[d], groups, rates[d], latencies[d], "scale-up" if d == 0 and pf.scale_up else "nic"))
    return dims


def chunk_orders(sizes, rates_bps, chunk_bytes, policy, resources=None) -> list[tuple[int, ...]]:
    """The order of dimensions (indices) each chunk reduce-scatters along.

    `dimensional`: innermost first for every chunk. `themis`: per chunk, of every order
    of the dimensions the one that leaves the most loaded dimension least loaded (load: the
    busy time assigned so far, a stage adding the ring's (p-1)/p of what is left of the
    chunk, sent and later gathered back, over the dimension's rate); ties go to the fixed
    order. Themis's own rule (the least-loaded dimension takes the largest stage) is the
    same when rates are alike; scoring whole orders keeps it from sending a full chunk
    over a much slower dimension because it happens to be idle.  `resources` names what
    each dimension's sends go through (default: its own links): dimensions that share one
    (the server and pod dimensions both use the GPU's NIC) share one load."""
    if policy not in POLICIES:
        raise ScenarioError("algorithm", f"unknown dimension policy {policy!r}; valid: {', '.join(POLICIES)}")
    n = len(sizes)
    if policy == "dimensional":
        return [tuple(range(n))] * len(chunk_bytes)
    names = list(range(n)) if resources is None else list(resources)
    resource = np.array([names.index(r) for r in names])
    load = np.zeros(n)
    orders = []
    for c in chunk_bytes:
        best = None
        for order in itertools.permutations(range(n)):
            added, left = np.zeros(n), float(c)
            for d in order:
                added[resource[d]] += 2 * (sizes[d] - 1) / sizes[d] * left * 8 / rates_bps[d]
                left /= sizes[d]
            score = ((load + added).max(), (load + added).sum())
            if best is None or score < best[0]:
                best = (score, order, added)
        orders.append(best[1])
        load += best[2]
    return orders


def _stages(dims, order, nbytes):
    """[(dimension, op, bytes)] of one chunk: reduce-scatters along `order`, all-gathers back."""
    stages, left = [], nbytes
    for d in order:
        stages.append((d, "reducescatter", left))
        left = max(1, left // dims[d].size)
    return stages + [(d, "allgather", b) for d, _, b in reversed(stages)]


def _service_order(dims, plans):
    """(chunk, stage index) pairs in the order the dimensions start them: list scheduling
    with one stage at a time per dimension, a chunk's stages in sequence, estimated times."""
    free = [0.0] * len(dims)                      # when each dimension is next idle
    ready = [0.0] * len(plans)                    # when each chunk's next stage may start
    nxt = [0] * len(plans)
    out = []
    while True:
        waiting = [(max(ready[c], free[plans[c][nxt[c]][0]]), c) for c in range(len(plans)) if nxt[c] < len(plans[c])]
        if not waiting:
            return out
        start, c = min(waiting)
        d, _, nbytes = plans[c][nxt[c]]
        ready[c] = free[d] = start + dims[d].stage_s(nbytes)
        out.append((c, nxt[c]))
        nxt[c] += 1


def multidim_allreduce(t: Transfers, m: int, chunks: int, policy: str) -> list[tuple[int, ...]]:
    """All-reduce of `m` bytes on the ranks of `t` in `chunks` chunks, dimension orders by
    `policy`, each stage a ring.  Returns each chunk's order."""
    dims = platform_dimensions(t)
    p = t.ranks.size
    chunk_bytes = [int(b) for b in split_bytes(m, chunks) if b > 0]
    orders = chunk_orders([d.size for d in dims], [d.rate_bps for d in dims], chunk_bytes, policy,
                          [d.resource for d in dims])
    plans = [_stages(dims, order, nbytes) for order, nbytes in zip(orders, chunk_bytes)]
    busy = [np.full((t.pieces, p), -1, np.int64) for _ in dims]      # each dimension's last stage, per rank
    got = [np.full((t.pieces, p), -1, np.int64) for _ in plans]      # each chunk's progress, per rank
    for c, j in _service_order(dims, plans):
        d, op, nbytes = plans[c][j]
        for row in dims[d].groups:
            done = ring(t, op, nbytes, ready=(got[c][:, row], busy[d][:, row]), order=row)
            got[c][:, row] = busy[d][:, row] = done
    return orders


def _one_chunk_at_a_time(plan: Plan, platform, ranks) -> Plan:
    """Chunks as a hierarchical all-reduce's, each scheduled on its own (one piece per transfer)."""
    return replace(grouped_chunks(plan, platform, ranks), pieces=1)


def _policy(policy: str) -> Algorithm:
    """The all-reduce whose chunks take their orders by `policy`; it looks at pods, so each
    group is built on its own."""
    return Algorithm(policy, ("allreduce",), per_step(ring_steps), plan=_one_chunk_at_a_time,
                     build=lambda t, plan: multidim_allreduce(t, plan.size, plan.chunks, policy),
                     copyable=False)


DIMENSIONAL, THEMIS = (_policy(policy) for policy in POLICIES)
