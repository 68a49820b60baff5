"""Collective operations as dependency graphs of flows (all-reduce, all-to-all, ...).

A collective on ranks r_0..r_{p-1} (hosts) becomes flows with data dependencies: a
rank forwards data only after the data it depends on has arrived.  Every message is
split into `chunks` pieces that pipeline through the steps; the chunks of one
transfer go in order (chunk c waits for chunk c-1 of the same transfer).  Each rank
gets a zero-length start node (the collective's trigger, a root or the child of
whatever must come first) and a done node (after every flow it receives that nothing
else waits for), so collectives chain into training iterations.

`size` follows nccl-tests: the larger per-rank buffer (all-reduce: the buffer;
all-gather: the gathered output; reduce-scatter: the input; all-to-all: what each rank
sends in total, split evenly among the others; broadcast/reduce: the buffer).

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
* hierarchical (all-reduce, `group_size` ranks per group): ring reduce-scatter in each
  group, ring all-reduce across groups between ranks of the same local index, ring
  all-gather in each group: 2(p1-1)/p1 m/B1 + 2(p2-1)/(p1 p2) m/B2 + 2(p1-1) alpha1 + 2(p2-1) alpha2.
* direct (all-to-all: every pair at once, NIC-bound m/B; broadcast/reduce: root to or
  from every rank at once) and pairwise (all-to-all in p-1 steps, rank i to i+k at step k).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rocesim.config import DEFAULT_FLOW_PRIORITY
from rocesim.errors import ScenarioError

ALGORITHMS = {
    "allreduce": ("ring", "ring_bidir", "halving_doubling", "double_binary_tree", "hierarchical"),
    "reducescatter": ("ring", "ring_bidir", "halving_doubling"),
    "allgather": ("ring", "ring_bidir", "halving_doubling"),
    "alltoall": ("direct", "pairwise"),
    "broadcast": ("ring", "direct"),
    "reduce": ("ring", "direct"),
}
DEFAULT_ALGORITHM = {"allreduce": "ring", "reducescatter": "ring", "allgather": "ring",
                     "alltoall": "direct", "broadcast": "ring", "reduce": "ring"}


@dataclass
class CollectiveRecord:
    """What a collective became in the graph (graph-local ids until added to a Simulation)."""

    id: int
    op: str
    algorithm: str
    ranks: np.ndarray          # host of each rank
    size: int
    start_nodes: np.ndarray    # per rank
    done_nodes: np.ndarray     # per rank
    flows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def shifted(self, offset: int) -> "CollectiveRecord":
        return CollectiveRecord(self.id, self.op, self.algorithm, self.ranks, self.size,
                                self.start_nodes + offset, self.done_nodes + offset, self.flows + offset)


def split_bytes(total: int, parts: int) -> np.ndarray:
    """`parts` integer sizes that add up to `total`, as equal as possible."""
    edges = (np.int64(total) * np.arange(parts + 1, dtype=np.int64)) // parts
    return np.diff(edges)


class _Transfers:
    """Adds transfers (one flow per chunk, chunks in order) for one collective."""

    def __init__(self, g, hosts, chunks, prio, cid, iteration, tag):
        self.g, self.hosts, self.C = g, np.asarray(hosts, np.int64), chunks
        self.kw = dict(prio=prio, collective=cid, iteration=iteration, tag=tag)
        self.ids, self.src, self.dst = [], [], []          # per transfer block: ids, rank indices

    def send(self, src, dst, nbytes, after=()):
        """Transfers src[k] -> dst[k] (rank indices) of nbytes[k]; returns ids of shape (C, k).

        `after` lists arrays of ids of shape (C, k) (-1: none): chunk c of transfer k waits
        for after[j][c, k] for every j.
        """
        src, dst = np.atleast_1d(src), np.atleast_1d(dst)
        nbytes = np.broadcast_to(np.asarray(nbytes, np.int64), src.shape)
        sizes = np.stack([split_bytes(int(b), self.C) for b in nbytes], axis=1) if src.size else \
            np.zeros((self.C, 0), np.int64)
        k = src.size
        ids = self.g.flows(np.tile(self.hosts[src], self.C), np.tile(self.hosts[dst], self.C),
                           sizes.ravel(), **self.kw).reshape(self.C, k)
        self.g.depend(ids[1:], ids[:-1])
        for a in after:
            a = np.broadcast_to(np.asarray(a), ids.shape)
            ok = a >= 0
            self.g.depend(ids[ok], a[ok])
        self.ids.append(ids.ravel())
        self.src.append(np.tile(src, self.C))
        self.dst.append(np.tile(dst, self.C))
        return ids

    def connect(self, start_nodes, done_nodes):
        """Every transfer waits for its sender's start node; each rank's done node waits
        for every transfer it receives."""
        if not self.ids:
            self.g.depend(done_nodes, start_nodes)
            return np.zeros(0, np.int64)
        ids, src, dst = (np.concatenate(x) for x in (self.ids, self.src, self.dst))
        # a rank sends nothing before its own input is ready, and is done only when
        # everything addressed to it has arrived (not just the last step's data)
        self.g.depend(ids, start_nodes[src])
        self.g.depend(done_nodes[dst], ids)
        self.g.depend(done_nodes, start_nodes)              # every done node has a parent
        return np.sort(ids)


def _ring_steps(t, order, blocks, n_steps, ready=None):
    """`n_steps` ring steps around `order` (rank indices): at step s the rank at position i
    sends block (i - s) mod p to position i+1, after what it received at step s-1 (at
    step 0, after `ready`, ids (C, p) per position, if given).  All-reduce runs the
    reduce-scatter steps straight into the all-gather ones: after p-1 steps position i
    holds the reduced block i+1, which is what step p-1 sends.  Returns the last step's ids."""
    p = len(order)
    nxt = np.roll(order, -1)
    pos = np.arange(p)
    prev = None
    for s in range(n_steps):
        after = () if ready is None else (ready,)
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


def _trees(p):
    """Parents (position -> parent position, -1 for the root) of the two binary trees."""
    heap = np.array([-1] + [(j - 1) // 2 for j in range(1, p)])
    rev = p - 1 - np.arange(p)                  # tree B: the heap over the reversed order
    parent_b = np.full(p, -1)
    parent_b[rev[1:]] = rev[heap[1:]]
    return heap, parent_b


def _tree_allreduce(t, parent, m, p):
    """Reduce to the root, then broadcast, along `parent` (positions); chunk by chunk."""
    children = [np.flatnonzero(parent == i) for i in range(p)]
    depth = np.zeros(p, int)
    for i in range(p):
        j = i
        while parent[j] >= 0:
            j = parent[j]
            depth[i] += 1
    up = {}
    for i in sorted(range(p), key=lambda i: -depth[i]):          # leaves first
        if parent[i] < 0:
            continue
        after = tuple(up[c][:, None] for c in children[i])
        up[i] = t.send([i], [parent[i]], m, after)[:, 0]
    root = int(np.flatnonzero(parent < 0)[0])
    down = {}
    for i in sorted(range(p), key=lambda i: depth[i]):           # root first
        for c in children[i]:
            if i == root:                                        # the root has it all reduced
                after = tuple(up[x][:, None] for x in children[root])
            else:
                after = (down[i][:, None],)
            down[c] = t.send([i], [c], m, after)[:, 0]


def _alltoall(t, algorithm, p, m):
    per_pair = m // (p - 1) if p > 1 else 0
    pos = np.arange(p)
    if algorithm == "direct":
        src = np.repeat(pos, p - 1)
        dst = np.array([j for i in range(p) for j in range(p) if j != i])
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


def _hierarchical(t, p, m, group_size):
    if not group_size or group_size < 1 or p % group_size:
        raise ScenarioError("group_size", f"hierarchical all-reduce needs group_size dividing the {p} ranks")
    p1, p2 = group_size, p // group_size
    groups = np.arange(p).reshape(p2, p1)
    ready = np.full((t.C, p), -1, np.int64)
    for grp in groups:                                    # reduce-scatter inside each group
        got = _ring(t, "reducescatter", p1, m, order=grp) if p1 > 1 else None
        if got is not None:
            ready[:, grp] = got
    done2 = ready.copy()
    block = split_bytes(m, p1)
    for local in range(p1):                               # all-reduce across groups
        col = groups[:, local]
        if p2 > 1:
            r = ready[:, col] if (ready[:, col] >= 0).all() else None
            done2[:, col] = _ring(t, "allreduce", p2, int(block[local]), ready=r, order=col)
    for gi, grp in enumerate(groups):                     # all-gather inside each group
        if p1 > 1:
            r = done2[:, grp] if (done2[:, grp] >= 0).all() else None
            _ring(t, "allgather", p1, m, ready=r, order=grp)
    return None


def add_collective(g, op, algorithm, ranks, size, *, chunks=1, prio=DEFAULT_FLOW_PRIORITY, cid=0,
                   iteration=-1, tag=0, start=0, group_size=None) -> CollectiveRecord:
    """Append a collective to Graph `g`; returns its record (graph-local ids).

    The start nodes are roots starting at `start` unless the caller makes them depend on
    other nodes (`g.depend(record.start_nodes, ...)`).
    """
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
    if not 1 <= chunks:
        raise ScenarioError("chunks", "must be at least 1")
    smallest = {"allreduce": size // (2 * p), "reducescatter": size // p, "allgather": size // p,
                "alltoall": size // max(p - 1, 1)}.get(op, size)
    chunks = max(1, min(chunks, smallest))                 # no empty chunk
    start_nodes = g.compute(ranks, 0, collective=cid, iteration=iteration, tag=tag, start=start)
    t = _Transfers(g, ranks, chunks, prio, cid, iteration, tag)
    if op == "alltoall":
        _alltoall(t, algorithm, p, size)
    elif op in ("broadcast", "reduce"):
        _rooted(t, op, algorithm, p, size)
    elif algorithm == "ring":
        _ring(t, op, p, size)
    elif algorithm == "ring_bidir":
        half = split_bytes(size, 2)
        _ring(t, op, p, int(half[0]))
        _ring(t, op, p, int(half[1]), order=np.arange(p)[::-1])
    elif algorithm == "halving_doubling":
        _halving_doubling(t, op, p, size)
    elif algorithm == "double_binary_tree":
        half = split_bytes(size, 2)
        pa, pb = _trees(p)
        _tree_allreduce(t, pa, int(half[0]), p)
        _tree_allreduce(t, pb, int(half[1]), p)
    else:
        _hierarchical(t, p, size, group_size)
    done_nodes = g.compute(ranks, 0, collective=cid, iteration=iteration, tag=tag)
    flows = t.connect(start_nodes, done_nodes)
    return CollectiveRecord(cid, op, algorithm, ranks, int(size), start_nodes, done_nodes, flows)
