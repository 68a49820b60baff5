"""Binary trees for reductions: the two trees of a double binary tree, and an all-reduce
(reduce to the root, then broadcast) along any tree of ranks, chunk by chunk.

NCCL's double binary tree (Sanders et al., "Two-tree algorithms for full bandwidth
broadcast, reduction and scan", 2009; NCCL 2.4): every rank is a leaf in one tree and an
inner node in the other, so that each tree carries half of the data and no rank sends
more than its share.  Here tree A is a heap over positions 0..p-1 and tree B the heap
over the reversed order.
"""
from __future__ import annotations

import numpy as np

__all__ = ["binary_trees", "tree_allreduce", "tree_depths"]


def binary_trees(p):
    """Parents (position -> parent position, -1 for the root) of the two binary trees."""
    heap = np.array([-1] + [(j - 1) // 2 for j in range(1, p)])
    rev = p - 1 - np.arange(p)                  # tree B: the heap over the reversed order
    parent_b = np.full(p, -1)
    parent_b[rev[1:]] = rev[heap[1:]]
    return heap, parent_b


def tree_depths(parent) -> np.ndarray:
    """Each node's distance to its tree's root (parent -1)."""
    parent = np.asarray(parent)
    depth = np.zeros(parent.size, np.int64)
    for i in range(parent.size):
        j = i
        while parent[j] >= 0:
            j = parent[j]
            depth[i] += 1
    return depth


def tree_allreduce(t, parent, m, p, order=None, ready=None):
    """Reduce to the root, then broadcast, along `parent` (indices into `order`, the rank
    positions; default 0..p-1), on the `rocesim.training.transfers.Transfers` `t`, piece by
    piece, each send after `ready` (ids (pieces, p), if given).  Returns ids (pieces, p):
    when each of them holds the result."""
    order = np.arange(p) if order is None else np.asarray(order)
    children = [np.flatnonzero(parent == i) for i in range(p)]
    depth = tree_depths(parent)
    own = (lambda i: ()) if ready is None else (lambda i: (ready[:, i:i + 1],))
    up = {}
    for i in sorted(range(p), key=lambda i: -depth[i]):          # leaves first
        if parent[i] < 0:
            continue
        after = tuple(up[c][:, None] for c in children[i]) + own(i)
        up[i] = t.send([order[i]], [order[parent[i]]], m, after)[:, 0]
    root = int(np.flatnonzero(parent < 0)[0])
    has = np.full((t.pieces, p), -1, np.int64)
    has[:, root] = t.join([up[x] for x in children[root]] + ([ready[:, root]] if ready is not None else []),
                          order[root])
    down = {}
    for i in sorted(range(p), key=lambda i: depth[i]):           # root first
        for c in children[i]:
            down[c] = t.send([order[i]], [order[c]], m, (has[:, i:i + 1],))[:, 0]
            has[:, c] = down[c]
    return has
