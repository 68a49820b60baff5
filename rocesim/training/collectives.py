"""Collective operations as dependency graphs of flows (all-reduce, all-to-all, ...).

A collective on ranks r_0..r_{p-1} (GPUs of a `rocesim.network.platform.Platform`; on a plain
topology, hosts) becomes flows with data dependencies: a
rank forwards data only after the data it depends on has arrived.  Every message is
split into `chunks` pieces that pipeline through the steps; the chunks of one
transfer go in order (chunk c waits for chunk c-1 of the same transfer).  Each rank
gets a zero-length start node (the collective's trigger, a root or the child of
whatever must come first) and a done node (after every flow it receives that nothing
else waits for), so collectives chain into training iterations.

`size` follows nccl-tests: the larger per-rank buffer (all-reduce: the buffer;
all-gather: the gathered output; reduce-scatter: the input; all-to-all: the send buffer,
of which each rank sends size/p to every rank including itself, so (p-1)/p of it leaves
the rank; broadcast/reduce: the buffer).

On a multi-GPU platform a transfer between GPUs of one server crosses the scale-up
domain as a fluid transfer (compute-like nodes, see `rocesim.network.platform`), one between
servers is a flow between the GPUs' NICs; with `pxn` (the default, as NCCL's PXN: see
`nccl.PXN_DEFAULT`; and always on a rail-only fabric) a transfer to another rail is
forwarded through the GPU on the destination's rail.

Algorithms (and their time in an idle network, p ranks, m bytes, link rate B,
per-step latency alpha; Thakur et al., IJHPCA 2005):

* ring (all-reduce = reduce-scatter + all-gather): 2(p-1)(alpha + m/(pB));
  reduce-scatter or all-gather alone: (p-1)(alpha + m/(pB)); broadcast/reduce: a chain.
* ring_bidir: half the data around the ring each way.
* halving_doubling (recursive halving then doubling, p a power of two):
  2 log2(p) alpha + 2 (p-1)/p m/B.
* double_binary_tree (all-reduce): two binary trees, each reducing then broadcasting
  half of the data; a rank is a leaf in one tree and inner in the other (NCCL's idea;
  here tree A is a heap over r_0..r_{p-1} and tree B the heap over the reversed order).
* hierarchical (all-reduce, `group_size` ranks per group, or on a multi-GPU platform the
  ranks of each server): ring reduce-scatter in each group, ring all-reduce across groups
  between ranks of the same local index (on a platform: rail by rail, each over its own
  NIC), ring all-gather in each group:
  2(p1-1)(alpha1 + m/(p1 B1)) + 2(p2-1)(alpha2 + m/(p1 p2 B2));
  hierarchical_tree: the same with a double binary tree across groups.
* dimensional and themis (all-reduce on a platform): ring stages along each dimension of
  the platform (GPU in server, server in pod, pod), `chunks` collective chunks each in a
  fixed order or in the order Themis's load balancing picks (`rocesim.training.dimensions`).
* direct (all-to-all: every pair at once, NIC-bound (p-1)/p m/B; broadcast/reduce: root
  to or from every rank at once) and pairwise (all-to-all in p-1 steps of m/p, rank i to
  i+k at step k).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from rocesim.config import DEFAULT_FLOW_PRIORITY
from rocesim.errors import ScenarioError
from rocesim.network.platform import Platform
from rocesim.network.topology import Topology
from rocesim.training.chunks import split_bytes, split_bytes_each
from rocesim.training.dimensions import multidim_allreduce
from rocesim.training.graph import COLUMNS, DTYPES, Graph
from rocesim.training.nccl import (PXN_DEFAULT, NcclConfig, auto_algorithm, nccl_nvls, nccl_ring, nccl_ring_stream,
                                   nccl_slice_estimate, nccl_tree, nccl_tree_stream, nvls_in_server_ps, tree_chunks,
                                   tree_streams)
from rocesim.training.trees import binary_trees, tree_allreduce

ALGORITHMS = {
    "allreduce": ("ring", "ring_bidir", "halving_doubling", "double_binary_tree", "hierarchical",
                  "hierarchical_tree", "dimensional", "themis", "nccl_ring", "nccl_tree", "nccl_nvls", "nccl_nvls_tree",
                  "auto"),
    "reducescatter": ("ring", "ring_bidir", "halving_doubling", "nccl_ring", "nccl_nvls", "auto"),
    "allgather": ("ring", "ring_bidir", "halving_doubling", "nccl_ring", "nccl_nvls", "auto"),
    "alltoall": ("direct", "pairwise"),
    "broadcast": ("ring", "direct"),
    "reduce": ("ring", "direct"),
}
DEFAULT_ALGORITHM = {"allreduce": "auto", "reducescatter": "auto", "allgather": "auto",
                     "alltoall": "direct", "broadcast": "ring", "reduce": "ring"}


def flow_count_estimate(op, algorithm, ranks, chunks, size=0, nccl=None) -> int:
    """About how many flows and compute steps a collective adds, an upper end (for the
    memory check): chunks x ranks x (steps + 4), where steps is ranks - 1 for ring-like and
    direct algorithms (twice that for all-reduce, and twice again for ring_bidir),
    2 log2(ranks) for halving-doubling, 4 for trees, and 1 for broadcast and reduce; for
    nccl_ring two nodes per slice (`nccl.nccl_slice_estimate`, from `size`)."""
    p = max(int(ranks), 2)
    if algorithm in ("nccl_ring", "nccl_nvls", "nccl_nvls_tree", "auto"):
        return 2 * nccl_slice_estimate(op, p, size, NcclConfig.resolve(nccl)) + 4 * p
    if algorithm == "nccl_tree":         # every chunk of every channel up and down the tree
        cfg = NcclConfig.resolve(nccl)
        tree = 2 * p * max(1, size // (cfg.buffer // 8))
        return 2 * min(tree, max(cfg.max_transfers, 2 * p * 16)) + 4 * p
    if op in ("broadcast", "reduce"):
        steps = 1
    elif algorithm == "halving_doubling":
        steps = 2 * max(1, (p - 1).bit_length())
    elif algorithm == "double_binary_tree":
        steps = 4
    else:
        steps = (p - 1) * (2 if op == "allreduce" else 1) * (2 if algorithm == "ring_bidir" else 1)
    return chunks * p * (steps + 4)


@dataclass
class CollectiveRecord:
    """What a collective became in the graph (graph-local ids until added to a Simulation)."""

    id: int
    op: str
    algorithm: str
    ranks: np.ndarray          # the GPU ranks (on a plain topology: hosts)
    size: int
    start_nodes: np.ndarray    # per rank
    done_nodes: np.ndarray     # per rank
    flows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    job: str = ""              # the job (workload) it belongs to, if any

    def shifted(self, offset: int, ids: int = 0) -> "CollectiveRecord":
        """The record once its graph's node ids start at `offset` and collective ids at `ids`."""
        return CollectiveRecord(self.id + ids, self.op, self.algorithm, self.ranks, self.size,
                                self.start_nodes + offset, self.done_nodes + offset, self.flows + offset,
                                self.job)


@dataclass
class CollectiveBatch:
    """One collective on several groups at once, as `CollectiveRecord`s row by row: row k is
    collective `ids[k]` on `ranks[k]`, with its start, done and other nodes in row k of
    `start_nodes`, `done_nodes` and `flows` (the records of a large job, without a Python
    object per collective)."""

    ids: np.ndarray            # (m,)
    op: str
    algorithm: str
    ranks: np.ndarray          # (m, p)
    size: int
    start_nodes: np.ndarray    # (m, a)
    done_nodes: np.ndarray     # (m, b)
    flows: np.ndarray          # (m, f), each row sorted
    job: str = ""

    def __len__(self) -> int:
        return self.ids.size

    def record(self, k: int) -> CollectiveRecord:
        """Row k as a record."""
        return CollectiveRecord(int(self.ids[k]), self.op, self.algorithm, self.ranks[k], self.size,
                                self.start_nodes[k], self.done_nodes[k], self.flows[k], self.job)

    def rows(self, name: str) -> np.ndarray:
        """The (m, .) array of `start_nodes`, `done_nodes` or `flows`."""
        return getattr(self, name)

    def shifted(self, offset: int, ids: int = 0) -> "CollectiveBatch":
        """The batch once its graph's node ids start at `offset` and collective ids at `ids`."""
        return CollectiveBatch(self.ids + ids, self.op, self.algorithm, self.ranks, self.size,
                               self.start_nodes + offset, self.done_nodes + offset, self.flows + offset, self.job)


class Collectives:
    """A sequence of `CollectiveRecord`s kept as records and `CollectiveBatch`es (its parts):
    indexing and iterating give records, `parts()` what it holds."""

    def __init__(self, parts=()):
        self._parts: list = []
        self._ends: list[int] = []
        self.extend(parts.parts() if isinstance(parts, Collectives) else parts)

    def append(self, part) -> None:
        """Add a record or a batch."""
        self._parts.append(part)
        self._ends.append((self._ends[-1] if self._ends else 0) + (len(part) if isinstance(part, CollectiveBatch)
                                                                    else 1))

    def extend(self, parts) -> None:
        """Add records and batches, in order."""
        for part in parts:
            self.append(part)

    def parts(self) -> list:
        """The records and batches held, in order."""
        return self._parts

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        n = len(self)
        if not -n <= k < n:
            raise IndexError("collective index out of range")
        k %= n
        i = bisect.bisect_right(self._ends, k)
        part = self._parts[i]
        return part.record(k - (self._ends[i - 1] if i else 0)) if isinstance(part, CollectiveBatch) else part

    def __iter__(self):
        for part in self._parts:
            if isinstance(part, CollectiveBatch):
                yield from (part.record(k) for k in range(len(part)))
            else:
                yield part

    def shifted(self, offset: int, ids: int = 0) -> "Collectives":
        """Every part once the graph's node ids start at `offset` and collective ids at `ids`."""
        return Collectives(p.shifted(offset, ids) for p in self._parts)


def node_rows(parts, name: str) -> np.ndarray:
    """`start_nodes` or `done_nodes` of records and batches, one row per collective."""
    return np.concatenate([p.rows(name) if isinstance(p, CollectiveBatch) else getattr(p, name)[None, :]
                           for p in parts])


def _hosts_for(ranks) -> Platform:
    """The plain platform for collectives on hosts (rank = host) up to the largest rank."""
    return Platform.hosts(Topology(int(np.max(ranks)) + 1 if np.size(ranks) else 1))


class _Transfers:
    """Adds transfers (chunks in order) for one collective on a platform.

    A transfer between ranks of different servers is one flow per chunk between their
    NICs; inside a server it is a fluid scale-up transfer: a compute node on the sender
    that holds its port (`ScaleUp.port_time_ps`), then one for the latency.  With
    rail-aligned forwarding (`Platform.relay`) a transfer to another rail first crosses
    the scale-up domain to the GPU on the destination's rail, then that GPU's NIC.
    """

    def __init__(self, g, ranks, chunks, prio, cid, iteration, tag, platform=None, pxn=False, lanes=1):
        self.g, self.ranks, self.C = g, np.asarray(ranks, np.int64), chunks
        self.platform = platform
        self.pxn = pxn
        if platform is None:
            self.platform = _hosts_for(self.ranks)
        self.kw = dict(prio=prio, collective=cid, iteration=iteration, tag=tag)
        # the last scale-up send of each GPU (rank id) in each lane: a GPU's port carries one
        # send (or one step's concurrent sends, sharing it) at a time per lane, in the order
        # they are issued; `lanes` (NCCL's channels) split the port's rate equally and run
        # side by side (`lane` is the one being built)
        self.lanes, self.lane = lanes, 0
        # NCCL's per-slice software latency and small-message floor (0: the textbook algorithms)
        self.step_delay, self.min_bytes = 0, 0
        self.port_last = np.full((lanes, self.platform.n_ranks), -1, np.int64)
        self.first, self.src = [], []      # per block: ids of each transfer's first node, sender position
        self.final, self.dst = [], []      # ... its arrival node, receiver position
        self.nodes = []                    # every node

    @property
    def node_kw(self) -> dict:
        """The graph keywords of this collective's compute-like nodes (no priority)."""
        return {k: v for k, v in self.kw.items() if k != "prio"}

    def subset(self, positions) -> "_Transfers":
        """Transfers among some of the ranks (`positions`), in the same graph and collective."""
        kw = self.kw
        return _Transfers(self.g, self.ranks[np.asarray(positions)], self.C, kw["prio"], kw["collective"],
                          kw["iteration"], kw["tag"], self.platform, self.pxn)

    def _leg(self, a, b, sizes):
        """Chunked transfers from ranks a[k] to b[k] issued together; returns (first, last)
        ids of shape (C, k): the node that occupies the sender and the arrival."""
        pf = self.platform
        C, k = sizes.shape
        sizes = np.maximum(sizes, self.min_bytes)
        first = np.empty((C, k), np.int64)
        last = np.empty((C, k), np.int64)
        net = pf.server[a] != pf.server[b]
        if net.any():
            ids = self.g.flows(np.tile(pf.host[a[net]], C), np.tile(pf.host[b[net]], C), sizes[:, net].ravel(),
                               delay=self.step_delay, **self.kw).reshape(C, -1)
            first[:, net] = last[:, net] = ids
            self.nodes.append(ids.ravel())
        su = ~net
        if su.any():
            su_up = pf.scale_up
            aa, bb = a[su], b[su]
            busy = np.stack([su_up.port_time_ps(aa, bb, sizes[c, su], pf.gpus_per_server) for c in range(C)])
            busy *= self.lanes
            lat = su_up.delay_ps * su_up.hops(pf.local[aa], pf.local[bb], pf.gpus_per_server)
            kw = self.node_kw
            wire = self.g.compute(np.tile(pf.host[aa], C), np.maximum(busy, 0).ravel(), delay=self.step_delay,
                                  **kw).reshape(C, -1)
            arrive = self.g.compute(np.tile(pf.host[bb], C), np.tile(lat, C), **kw).reshape(C, -1)
            self.g.depend(arrive, wire)
            queued = self.port_last[self.lane, aa]
            self.g.depend(wire[0][queued >= 0], queued[queued >= 0])
            self.port_last[self.lane, aa] = wire[-1]
            first[:, su], last[:, su] = wire, arrive
            self.nodes += [wire.ravel(), arrive.ravel()]
        self.g.depend(first[1:], first[:-1])          # the chunks of a transfer go in order
        return first, last

    def _route(self, a, b, sizes):
        """`_leg` from ranks a[k] to b[k], through the relay GPU when rail-aligned forwarding
        applies (`Platform.relay`): returns (first, last) ids of shape (C, k)."""
        relay = self.platform.relay(a, b, self.pxn)
        hop = relay >= 0
        first, last = self._leg(a, np.where(hop, relay, b), sizes)
        if hop.any():                             # then from the relay over its own NIC
            f2, l2 = self._leg(relay[hop], b[hop], sizes[:, hop])
            self.g.depend(f2, last[:, hop])
            last[:, hop] = l2
        return first, last

    def send(self, src, dst, nbytes, after=()):
        """Transfers src[k] -> dst[k] (rank positions) of nbytes[k]; returns the ids of their
        arrivals, shape (C, k).

        `after` lists arrays of ids of shape (C, k) (-1: none): chunk c of transfer k waits
        for after[j][c, k] for every j.
        """
        src, dst = np.atleast_1d(src), np.atleast_1d(dst)
        nbytes = np.broadcast_to(np.asarray(nbytes, np.int64), src.shape)
        k = src.size
        if not k:
            return np.zeros((self.C, 0), np.int64)
        first, final = self._route(self.ranks[src], self.ranks[dst], split_bytes_each(nbytes, self.C))
        for a in after:
            a = np.broadcast_to(np.asarray(a), first.shape)
            ok = a >= 0
            self.g.depend(first[ok], a[ok])
        self.first.append(first.ravel())
        self.src.append(np.tile(src, self.C))
        self.final.append(final.ravel())
        self.dst.append(np.tile(dst, self.C))
        return final

    def join(self, parents, position):
        """Zero-length nodes (C,) on the rank at `position` that wait for every array of
        ids (C,) in `parents` (a point where several inputs are all there)."""
        pf = self.platform
        ids = self.g.compute(np.full(self.C, pf.host[self.ranks[position]]), 0, **self.node_kw)
        for a in parents:
            a = np.asarray(a)
            ok = a >= 0
            self.g.depend(ids[ok], a[ok])
        self.nodes.append(ids)
        return ids

    def connect(self, start_nodes, done_nodes):
        """Every transfer waits for its sender's start node; each rank's done node waits
        for every transfer it receives."""
        self.g.depend(done_nodes, start_nodes)              # every done node has a parent
        if not self.first:
            return np.zeros(0, np.int64)
        # a rank sends nothing before its own input is ready, and is done only when
        # everything addressed to it has arrived (not just the last step's data)
        self.g.depend(np.concatenate(self.first), start_nodes[np.concatenate(self.src)])
        self.g.depend(done_nodes[np.concatenate(self.dst)], np.concatenate(self.final))
        return np.sort(np.concatenate(self.nodes))


def _ring_steps(t, order, blocks, n_steps, ready=None):
    """`n_steps` ring steps around `order` (rank indices): at step s the rank at position i
    sends block (i - s) mod p to position i+1, after what it received at step s-1 (at
    step 0, after `ready`, ids (C, p) per position, if given).  All-reduce runs the
    reduce-scatter steps straight into the all-gather ones: after p-1 steps position i
    holds the reduced block i+1, which is what step p-1 sends.  `ready` may be a tuple of
    such arrays (step 0 waits for all).  Returns the last step's ids."""
    p = len(order)
    nxt = np.roll(order, -1)
    pos = np.arange(p)
    prev = None
    for s in range(n_steps):
        after = () if ready is None else tuple(ready) if isinstance(ready, tuple) else (ready,)
        if prev is not None:
            after += (np.roll(prev, 1, axis=1),)        # what position i got from i-1
        prev = t.send(order, nxt, blocks[(pos - s) % p], after)
    return prev


def _ring(t, op, p, m, ready=None, order=None):
    """Ring reduce-scatter / all-gather / all-reduce over positions `order`; returns the
    ids (C, p) each position received last (indexed by position)."""
    order = np.arange(p) if order is None else np.asarray(order)
    blocks = split_bytes(m, p)
    n = {"reducescatter": p - 1, "allgather": p - 1, "allreduce": 2 * (p - 1)}[op]
    last = _ring_steps(t, order, blocks, n, ready)
    return np.roll(last, 1, axis=1)            # position i received from position i-1


def _halving_doubling(t, op, p, m):
    if p & (p - 1):
        raise ScenarioError("algorithm", f"halving_doubling needs a power-of-two number of ranks, got {p}")
    pos = np.arange(p)
    steps = []
    log_p = p.bit_length() - 1
    if op in ("allreduce", "reducescatter"):     # halving: exchange half of what is left
        steps += [(p >> (k + 1), m // (2 << k)) for k in range(log_p)]
    if op in ("allreduce", "allgather"):         # doubling: exchange all gathered so far
        steps += [(1 << k, (m // p) << k) for k in range(log_p)]
    received = []                              # what position i got at each earlier step
    for d, nbytes in steps:
        partner = pos ^ d
        ids = t.send(pos, partner, max(int(nbytes), 1), tuple(received))
        received.append(ids[:, partner])       # each step builds on every earlier one
    return received[-1]


def _alltoall(t, algorithm, p, m):
    """Each rank sends m/p to every rank, itself included (nccl-tests), so (p-1)/p of m leaves it."""
    per_pair = m // p
    pos = np.arange(p)
    if algorithm == "direct":
        src = np.repeat(pos, p - 1)
        dst = np.tile(pos, p)[np.repeat(pos, p) != np.tile(pos, p)]      # every j != i, in order
        t.send(src, dst, per_pair)
        return None
    prev_send = prev_recv = None
    for k in range(1, p):
        dst = (pos + k) % p
        after = () if prev_send is None else (prev_send, prev_recv)
        ids = t.send(pos, dst, per_pair, after)
        prev_send = ids
        prev_recv = ids[:, (pos - k) % p]
    return None


def _rooted(t, op, algorithm, p, m):
    pos = np.arange(p)
    if algorithm == "direct":
        if op == "broadcast":
            t.send(np.zeros(p - 1, int), pos[1:], m)
        else:
            t.send(pos[1:], np.zeros(p - 1, int), m)
        return None
    prev = None
    chain = pos if op == "broadcast" else pos[::-1]
    for i in range(p - 1):
        prev = t.send([chain[i]], [chain[i + 1]], m, () if prev is None else (prev,))
    return None


def _groups(t, p, group_size):
    """Positions grouped for a hierarchical collective, one row per group: `group_size`
    consecutive positions, or on a multi-GPU platform (no group_size) the ranks of each
    server, in rank order, so that column i holds the i-th GPU of every server."""
    if group_size is None and t.platform.gpus_per_server > 1:
        server = t.platform.server[t.ranks]
        order = np.lexsort((t.ranks, server))
        _, counts = np.unique(server, return_counts=True)
        if (counts != counts[0]).any():
            raise ScenarioError("ranks", "a hierarchical collective needs the same number of ranks in every server")
        return order.reshape(counts.size, counts[0])
    if not group_size or group_size < 1 or p % group_size:
        raise ScenarioError("group_size", f"hierarchical all-reduce needs group_size dividing the {p} ranks")
    return np.arange(p).reshape(p // group_size, group_size)


def _hierarchical(t, p, m, group_size, inter="ring"):
    """Reduce-scatter inside each group (server), all-reduce of each block across groups
    between the ranks of the same local index (each over its own NIC: rail by rail), by a
    ring or a double binary tree, then all-gather inside each group."""
    groups = _groups(t, p, group_size)
    p2, p1 = groups.shape
    ready = np.full((t.C, p), -1, np.int64)
    for grp in groups:                                    # reduce-scatter inside each group
        got = _ring(t, "reducescatter", p1, m, order=grp) if p1 > 1 else None
        if got is not None:
            ready[:, grp] = got
    done2 = ready.copy()
    block = split_bytes(m, p1)
    for local in range(p1):                               # all-reduce across groups
        col = groups[:, local]
        if p2 < 2:
            continue
        r = ready[:, col] if (ready[:, col] >= 0).all() else None
        if inter == "ring":
            done2[:, col] = _ring(t, "allreduce", p2, int(block[local]), ready=r, order=col)
        else:
            half = split_bytes(int(block[local]), 2)
            got = [tree_allreduce(t, tree, int(nbytes), p2, order=col, ready=r)
                   for tree, nbytes in zip(binary_trees(p2), half)]
            done2[:, col] = np.stack([t.join([got[0][:, j], got[1][:, j]], col[j]) for j in range(p2)], axis=1)
    for gi, grp in enumerate(groups):                     # all-gather inside each group
        if p1 > 1:
            r = done2[:, grp] if (done2[:, grp] >= 0).all() else None
            _ring(t, "allgather", p1, m, ready=r, order=grp)
    return None


def _in_server_ps(t, op, algorithm, m, step_latency=0):
    """The duration of a collective whose ranks all sit in one server, from the fluid
    scale-up model's closed form (ring all-reduce, reduce-scatter, all-gather; direct
    all-to-all; NVLS: `nccl.nvls_in_server_ps`), or None when there is none.  With one chunk and every rank starting
    together it is exactly what the step-by-step transfers give (tests/network/test_platform.py),
    in a handful of nodes instead of hundreds."""
    pf, ranks = t.platform, t.ranks
    su, G = pf.scale_up, pf.gpus_per_server
    if su is None or G == 1 or t.C != 1 or np.unique(pf.server[ranks]).size != 1:
        return None
    p = ranks.size
    if algorithm == "nccl_nvls":
        return nvls_in_server_ps(pf, ranks, op, m, step_latency)
    if algorithm in ("ring", "nccl_ring") and op in ("allreduce", "reducescatter", "allgather"):
        a, b = ranks, np.roll(ranks, -1)
        nbytes = np.full(p, split_bytes(m, p).max())
        steps = 2 * (p - 1) if op == "allreduce" else p - 1
    elif algorithm == "direct" and op == "alltoall":
        a, b = np.repeat(ranks, p), np.tile(ranks, p)
        a, b = a[a != b], b[a != b]
        nbytes = np.full(a.size, m // p)
        steps = 1
    else:
        return None
    busy = su.port_time_ps(a, b, nbytes, G).max()
    return steps * int(busy + step_latency + su.delay_ps * su.hops(pf.local[a], pf.local[b], G).max())


def point_to_point(g, platform, src, dst, sizes, *, prio=DEFAULT_FLOW_PRIORITY, iteration=-1, tag=0,
                   start=0, pxn=PXN_DEFAULT) -> tuple[np.ndarray, np.ndarray]:
    """Transfers of `sizes[k]` bytes from rank `src[k]` to rank `dst[k]` of `platform` (None:
    ranks are hosts), not part of a collective: a flow between their NICs, or inside a
    server a fluid scale-up transfer (its sender's port held in the order given, then the
    latency).  With `pxn` (and always on a rail-only fabric) a transfer to another rail of
    another server first crosses the scale-up domain to the GPU on the destination's rail,
    as NCCL's send/recv does (NCCL_P2P_PXN_LEVEL 2).  Returns the ids of (the node each
    starts with, the node it arrives with); for a flow both are the flow.  Roots start at
    `start`."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    t = _Transfers(g, np.concatenate([src, dst]), 1, prio, -1, iteration, tag, platform, pxn)
    t.kw["start"] = start
    first, last = t._route(src, dst, np.asarray(sizes, np.int64)[None, :])
    return first[0], last[0]


def add_sendrecv(g, src, dst, size, *, platform=None, prio=DEFAULT_FLOW_PRIORITY, cid=0, iteration=-1, tag=0,
                 start=0, chunks=1, pxn=PXN_DEFAULT, job="") -> CollectiveRecord:
    """Point-to-point transfers src[k] -> dst[k] (ranks) of `size` bytes each, at once (a
    pipeline-parallel stage boundary); a record like a collective's, with op `sendrecv`
    and one start and done node per rank of `src` then `dst`."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    ranks = np.concatenate([src, dst])
    if size <= 0:
        raise ScenarioError("size", "must be positive")
    t = _Transfers(g, ranks, max(1, min(chunks, size)), prio, cid, iteration, tag, platform, pxn)
    hosts = t.platform.host_of(ranks)
    start_nodes = g.compute(hosts, 0, collective=cid, iteration=iteration, tag=tag, start=start)
    k = src.size
    t.send(np.arange(k), np.arange(k, 2 * k), size)
    done_nodes = g.compute(hosts, 0, collective=cid, iteration=iteration, tag=tag)
    flows = t.connect(start_nodes, done_nodes)
    return CollectiveRecord(cid, "sendrecv", "direct", ranks, int(size), start_nodes, done_nodes, flows, job)


def _plan(op, algorithm, ranks, size, chunks, group_size, platform, nccl):
    """A collective's inputs checked and its plan: (ranks, algorithm (auto resolved), chunks,
    pieces each transfer is cut into, lanes (channels), whether NCCL's tree runs as
    streams, the NCCL settings)."""
    if op not in ALGORITHMS:
        raise ScenarioError("op", f"unknown collective {op!r}; valid: {', '.join(ALGORITHMS)}")
    if algorithm not in ALGORITHMS[op]:
        raise ScenarioError("algorithm", f"{op} has no algorithm {algorithm!r}; valid: {', '.join(ALGORITHMS[op])}")
    ranks = np.asarray(ranks, np.int64)
    p = ranks.size
    if p < 2 or np.unique(ranks).size != p:
        raise ScenarioError("ranks", "a collective needs at least two distinct hosts")
    if size <= 0:
        raise ScenarioError("size", "must be positive")
    if algorithm == "auto":                                 # as NCCL's tuning model picks
        algorithm = auto_algorithm(op, platform if platform is not None else _hosts_for(ranks), ranks, size)
    if not 1 <= chunks:
        raise ScenarioError("chunks", "must be at least 1")
    smallest = {"allreduce": size // (2 * p), "reducescatter": size // p, "allgather": size // p,
                "alltoall": size // p}.get(op, size)
    if op == "alltoall" and size < p:
        raise ScenarioError("size", f"an all-to-all of {size} B on {p} ranks sends nothing (size/p bytes per pair)")
    if algorithm.startswith("hierarchical") or algorithm in ("dimensional", "themis"):
        smallest //= 2 * max(platform.gpus_per_server if platform is not None else 1, group_size or 1)
    chunks = max(1, min(chunks, smallest))                 # no empty chunk
    per_dimension = algorithm in ("dimensional", "themis")
    nccl = NcclConfig.resolve(nccl)
    pieces, lanes, stream = chunks, 1, False                # what each transfer is cut into; channels
    if algorithm == "nccl_tree":                            # NCCL cuts its own chunks and slices
        pieces, lanes = tree_chunks(platform if platform is not None else _hosts_for(ranks), ranks, size, nccl)
        stream = tree_streams(platform if platform is not None else _hosts_for(ranks), ranks, size, nccl)
        pieces = 1 if stream else pieces
    elif per_dimension or algorithm == "nccl_ring":         # (dimensional: chunks scheduled one by one)
        pieces = 1
    return ranks, algorithm, chunks, pieces, lanes, stream, nccl


def _step_latency(algorithm, nccl) -> int:
    """NCCL's per-step software latency (ps) that a closed form inside one server counts."""
    return nccl.step_latency if algorithm in ("nccl_ring", "nccl_nvls") else 0


def closed_form(op, algorithm, ranks, size, *, platform, chunks=1, nccl=None) -> tuple[str, int] | None:
    """(algorithm, duration in ps) when `append_collective` builds the collective on `ranks`
    of `platform` in its closed form (inside one server, `_in_server_ps`), else None."""
    ranks, algorithm, _, pieces, lanes, _, nccl = _plan(op, algorithm, ranks, size, chunks, None, platform, nccl)
    t = _Transfers(Graph(), ranks, pieces, DEFAULT_FLOW_PRIORITY, 0, -1, 0, platform, False, lanes)
    ps = _in_server_ps(t, op, algorithm, size, _step_latency(algorithm, nccl))
    return None if ps is None else (algorithm, ps)


def closed_form_rows(op, algorithm, rows, size, *, platform, chunks=1, nccl=None) -> tuple[str, int] | None:
    """The closed form (`closed_form`) of `op` on every row of `rows` (ranks, one group per
    row), when each group sits in one server and every placement in a server gives the same
    one (it depends on the local GPUs only); else None."""
    rows = np.atleast_2d(np.asarray(rows, np.int64))
    if (platform.server[rows] != platform.server[rows[:, :1]]).any():
        return None
    first: dict = {}                                         # a row of each placement
    for k, local in enumerate(map(tuple, platform.local[rows].tolist())):
        first.setdefault(local, k)
    forms = {closed_form(op, algorithm, rows[k], size, platform=platform, chunks=chunks, nccl=nccl)
             for k in first.values()}
    return forms.pop() if len(forms) == 1 else None


def append_collective(g, op, algorithm, ranks, size, *, chunks=1, prio=DEFAULT_FLOW_PRIORITY, cid=0,
                   iteration=-1, tag=0, start=0, group_size=None, platform=None, pxn=PXN_DEFAULT,
                   job="", closed_form=True, nccl=None) -> CollectiveRecord:
    """Append a collective to Graph `g`; returns its record (graph-local ids).

    `ranks` are GPU ranks of `platform` (a `rocesim.network.platform.Platform`; None: ranks are
    hosts).  `pxn` forwards transfers to other rails through the scale-up domain first
    (NCCL's PXN, on by default as in NCCL).
    A collective inside one server takes its fluid closed form when it has one
    (`closed_form`, see `_in_server_ps`): it starts when every rank has started.
    `nccl` (an `NcclConfig` or a mapping of `rocesim.training.nccl.NCCL` settings) shapes
    the nccl_* algorithms.
    The start nodes are roots starting at `start` unless the caller makes them depend on
    other nodes (`g.depend(record.start_nodes, ...)`).
    """
    ranks, algorithm, chunks, pieces, lanes, stream, nccl = _plan(op, algorithm, ranks, size, chunks, group_size,
                                                                   platform, nccl)
    p = ranks.size
    per_dimension = algorithm in ("dimensional", "themis")  # chunks scheduled one by one, not pipelined
    t = _Transfers(g, ranks, pieces, prio, cid, iteration, tag, platform, pxn, lanes)
    hosts = t.platform.host_of(ranks)
    start_nodes = g.compute(hosts, 0, collective=cid, iteration=iteration, tag=tag, start=start)
    fluid = _in_server_ps(t, op, algorithm, size, _step_latency(algorithm, nccl)) if closed_form else None
    if fluid is not None:
        everyone = t.join([], 0)                    # when every rank has started (C = 1)
        g.depend(np.repeat(everyone, p), start_nodes)
        busy = g.compute(hosts, fluid, **t.node_kw)
        g.depend(busy, np.repeat(everyone, p))
        t.nodes.append(busy)
        t.first.append(busy)                        # so that connect() makes done wait for them
        t.src.append(np.arange(p))
        t.final.append(busy)
        t.dst.append(np.arange(p))
    elif op == "alltoall":
        _alltoall(t, algorithm, p, size)
    elif op in ("broadcast", "reduce"):
        _rooted(t, op, algorithm, p, size)
    elif algorithm == "nccl_ring":
        (nccl_ring_stream if nccl.pipeline == "stream" else nccl_ring)(t, op, size, nccl)
    elif algorithm == "nccl_tree":
        (nccl_tree_stream if stream else nccl_tree)(t, size, nccl)
    elif algorithm in ("nccl_nvls", "nccl_nvls_tree"):
        nccl_nvls(t, op, size, nccl, "tree" if algorithm == "nccl_nvls_tree" else "ring")
    elif algorithm == "ring":
        _ring(t, op, p, size)
    elif algorithm == "ring_bidir":
        half = split_bytes(size, 2)
        _ring(t, op, p, int(half[0]))
        _ring(t, op, p, int(half[1]), order=np.arange(p)[::-1])
    elif algorithm == "halving_doubling":
        _halving_doubling(t, op, p, size)
    elif per_dimension:
        multidim_allreduce(t, size, chunks, algorithm, _ring)
    elif algorithm == "double_binary_tree":
        half = split_bytes(size, 2)
        pa, pb = binary_trees(p)
        tree_allreduce(t, pa, int(half[0]), p)
        tree_allreduce(t, pb, int(half[1]), p)
    else:
        _hierarchical(t, p, size, group_size, "ring" if algorithm == "hierarchical" else "tree")
    done_nodes = g.compute(hosts, 0, collective=cid, iteration=iteration, tag=tag)
    flows = t.connect(start_nodes, done_nodes)
    return CollectiveRecord(cid, op, algorithm, ranks, int(size), start_nodes, done_nodes, flows, job)


class Templates:
    """Collectives built once and copied (`append_collectives`), for one platform.

    A collective's graph depends on its ranks only through their servers' order, their
    local GPU indices (hence their rails) and their NICs' rates and delays (`_Transfers`,
    `nccl`, `trees`; ranks are numbered server-major, so the ranks' order follows). Two
    groups with the same local indices position by position, whose servers come in the
    same order, make the same graph up to the hosts, when every NIC has the same link:
    it is built once, on the first such group, and copied with its hosts moved server by
    server.  The dimensional and themis all-reduces (which also look at pods) and plain
    topologies of differing hosts are built group by group."""

    def __init__(self, platform: Platform):
        self.platform = platform
        topo = platform.topology
        links = {(topo.host_rate(h), topo.host_delay(h)) for h in range(topo.n_hosts)}
        self.uniform = len(links) <= 1
        self.built: dict = {}                    # (options, shape) -> _Template
        self.layouts: dict = {}                  # (options, rows) -> _Layout

    def signatures(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per row of ranks: (its key: local indices, then each position's server as its rank
        among the row's servers; the row's servers in order; where each new one starts in that
        sorted row)."""
        pf = self.platform
        server = pf.server[rows]
        order = np.argsort(server, axis=1, kind="stable")
        ordered = np.take_along_axis(server, order, axis=1)
        new = np.ones(ordered.shape, bool)
        new[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
        dense = np.empty_like(ordered)
        np.put_along_axis(dense, order, np.cumsum(new, axis=1) - 1, axis=1)
        return np.concatenate([pf.local[rows], dense], axis=1), ordered, new


@dataclass
class _Template:
    """One collective's nodes and edges (int32) with ids from 0 and hosts as (server index in
    the group's sorted servers, NIC of the server); the record's node ids.  `columns` leaves
    src and dst out (the hosts)."""

    columns: dict
    src_at: np.ndarray
    dst_at: np.ndarray
    nic_src: np.ndarray
    nic_dst: np.ndarray
    children: np.ndarray
    parents: np.ndarray
    record: CollectiveRecord


def _template(templates, op, algorithm, ranks, size, ordered, new, **options) -> _Template:
    """Build the collective on `ranks` into a graph of its own and describe it as a template."""
    tg = Graph()
    rec = append_collective(tg, op, algorithm, ranks, size, cid=0, **options)
    servers = ordered[new]                                   # the group's servers, sorted
    N = templates.platform.nics_per_server
    at = {}
    for side in ("src", "dst"):
        host = tg.column(side)
        server = host // N
        i = np.searchsorted(servers, server)
        if (i >= servers.size).any() or (servers[np.minimum(i, servers.size - 1)] != server).any():
            raise AssertionError("a collective's node outside its ranks' servers")   # (cannot happen)
        at[side] = (i.astype(np.int32), host % N)
    cols = {name: tg.column(name) for name in COLUMNS if name not in at}
    children, parents = tg.edges(np.int32)
    return _Template(cols, at["src"][0], at["dst"][0], at["src"][1], at["dst"][1], children, parents, rec)


def append_collectives(g, op, algorithm, rows, size, *, cids, templates: Templates | None = None, **options
                       ) -> list:
    """`append_collective(g, op, algorithm, row, size, cid=cids[k], **options)` for every row
    `k` of `rows` (ranks, one group per row), in row order: the same nodes, ids and records
    (as records and `CollectiveBatch`es, in row order);
    the same edges, each node's children in the same order (the edges of all the groups
    come first, in row order).  With `templates` (for the graph's platform) a group whose
    collective has the same shape as an earlier one's (`Templates`) is copied from it
    instead of built, and a call like an earlier one (the same rows and options) repeats it."""
    rows = np.atleast_2d(np.asarray(rows, np.int64))
    cids = np.asarray(cids, np.int64)
    per_dim = algorithm in ("dimensional", "themis")
    if templates is None or not templates.uniform or per_dim or options.get("platform") is not templates.platform:
        return [append_collective(g, op, algorithm, row, size, cid=int(c), **options) for row, c in zip(rows, cids)]
    fixed = (op, algorithm, int(size), NcclConfig.resolve(options.get("nccl")),
             tuple(sorted((k, v) for k, v in options.items() if k not in ("nccl", "platform"))))
    key = (fixed, rows.shape, rows.tobytes())
    if key not in templates.layouts:
        templates.layouts[key] = _layout(templates, fixed, op, algorithm, rows, size, options)
    lay = templates.layouts[key]
    n0 = g.n
    # the layout's columns themselves (a graph never changes its arrays): no copy of them
    cols = dict(lay.columns, collective=np.where(lay.cid_row >= 0, cids.astype(np.int32)[lay.cid_row], np.int32(-1)))
    records = [CollectiveBatch(cids[which], r.op, r.algorithm, rows[which], r.size, r.start_nodes + n0,
                               r.done_nodes + n0, r.flows + n0, r.job) for which, r in lay.records]
    g.extend(cols, lay.children + np.int32(n0), lay.parents + np.int32(n0))       # (int32: graph ids)
    return records


@dataclass
class _Layout:
    """What `append_collectives` appends for some rows, node ids from 0: the columns (the
    collective's id left out: each node's row in `cid_row`, -1 for none), the edges (int32),
    and the records as (rows, a batch with row-relative ids)."""

    columns: dict
    cid_row: np.ndarray
    children: np.ndarray
    parents: np.ndarray
    records: list


def _layout(templates, fixed, op, algorithm, rows, size, options) -> _Layout:
    """The `_Layout` of `rows`: each row's collective copied from the template of its shape."""
    keys, ordered, new = templates.signatures(rows)
    if (keys == keys[:1]).all():                          # (the usual case: one shape)
        kind, first = np.zeros(len(keys), np.int64), np.zeros(1, np.int64)
    else:
        index: dict = {}
        kind = np.array([index.setdefault(k.tobytes(), len(index)) for k in keys], np.int64)
        first = np.unique(kind, return_index=True)[1]
    tmpl = []
    for f in first:
        key = (fixed, keys[f].tobytes())
        if key not in templates.built:
            templates.built[key] = _template(templates, op, algorithm, rows[f], size, ordered[f], new[f], **options)
        tmpl.append(templates.built[key])
    sizes = np.array([t.src_at.size for t in tmpl], np.int64)[kind]
    base = np.concatenate([[0], np.cumsum(sizes)[:-1]])     # where each row's nodes start
    N = templates.platform.nics_per_server
    cols = {name: np.empty(int(sizes.sum()), DTYPES[name]) for name in COLUMNS if name != "collective"}
    cid_row = np.empty(int(sizes.sum()), np.int32)          # (the column itself is filled per call)
    n_edges = np.array([t.children.size for t in tmpl], np.int64)[kind]
    edge_base = np.concatenate([[0], np.cumsum(n_edges)[:-1]]).astype(np.int32)   # each row's edges, in row order
    children, parents = np.empty(int(n_edges.sum()), np.int32), np.empty(int(n_edges.sum()), np.int32)
    for u, t in enumerate(tmpl):                             # (int32 positions: no int64 (rows, nodes) arrays)
        which = np.flatnonzero(kind == u)
        servers = ordered[which][:, new[first[u]]]           # per row: its servers, sorted
        row_base = base[which].astype(np.int32)[:, None]
        at = row_base + np.arange(t.src_at.size, dtype=np.int32)
        cols["src"][at] = servers[:, t.src_at] * N + t.nic_src
        cols["dst"][at] = servers[:, t.dst_at] * N + t.nic_dst
        cid_row[at] = np.where(t.columns["collective"] >= 0, which[:, None].astype(np.int32), np.int32(-1))
        for name, v in t.columns.items():
            if name != "collective":
                cols[name][at] = v
        at = edge_base[which][:, None] + np.arange(t.children.size, dtype=np.int32)
        children[at] = t.children + row_base
        parents[at] = t.parents + row_base
    # the records: one batch when every group's record has the same shape (the usual case)
    shapes = {(t.record.algorithm, t.record.start_nodes.size, t.record.done_nodes.size, t.record.flows.size)
              for t in tmpl}
    if len(shapes) == 1:
        r = tmpl[0].record
        rec_rows = {name: np.empty((rows.shape[0], getattr(r, name).size), np.int64)
                    for name in ("start_nodes", "done_nodes", "flows")}
        for u, t in enumerate(tmpl):
            which = np.flatnonzero(kind == u)
            for name, out in rec_rows.items():
                out[which] = getattr(t.record, name)[None, :] + base[which][:, None]
        records = [(np.arange(rows.shape[0]), CollectiveBatch(None, r.op, r.algorithm, None, r.size, **rec_rows,
                                                              job=r.job))]
    else:
        records = []
        for k in range(rows.shape[0]):
            r, b = tmpl[kind[k]].record, base[k]
            records.append((np.arange(k, k + 1), CollectiveBatch(None, r.op, r.algorithm, None, r.size,
                                                                 r.start_nodes[None, :] + b,
                                                                 r.done_nodes[None, :] + b, r.flows[None, :] + b,
                                                                 r.job)))
    return _Layout(cols, cid_row, children, parents, records)
