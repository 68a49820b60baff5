"""The hierarchical all-reduces: inside groups, then across them.

hierarchical (`group_size` ranks per group, or on a multi-GPU platform the ranks of each
server): ring reduce-scatter in each group, ring all-reduce across groups between ranks of
the same local index (on a platform: rail by rail, each over its own NIC), ring all-gather
in each group.  In an idle network (p1 ranks per group of link rate B1 and step latency
alpha1, p2 groups across links of B2 and alpha2; Thakur et al., IJHPCA 2005):
2(p1-1)(alpha1 + m/(p1 B1)) + 2(p2-1)(alpha2 + m/(p1 p2 B2)).
hierarchical_tree: the same with a double binary tree across groups.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from rocesim.errors import ScenarioError
from rocesim.training.algorithms.registry import Algorithm, Plan, per_step, smallest_block
from rocesim.training.algorithms.ring import ring, ring_steps
from rocesim.training.chunks import split_bytes
from rocesim.training.transfers import Transfers
from rocesim.training.trees import binary_trees, tree_allreduce

__all__ = ["HIERARCHICAL", "HIERARCHICAL_TREE", "grouped_chunks"]


def grouped_chunks(plan: Plan, platform, ranks) -> Plan:
    """The plan with chunks (each transfer's pieces) no smaller than a block of a block (a
    collective in groups splits the buffer twice: by group member, then across the groups)."""
    split = 2 * max(platform.gpus_per_server, plan.group_size or 1)
    chunks = max(1, min(plan.chunks, smallest_block(plan.op, plan.size, len(ranks)) // split))
    return replace(plan, chunks=chunks, pieces=chunks)


def _groups(t: Transfers, group_size):
    """Positions grouped for a hierarchical collective, one row per group: `group_size`
    consecutive positions, or on a multi-GPU platform (no group_size) the ranks of each
    server, in rank order, so that column i holds the i-th GPU of every server."""
    p = t.ranks.size
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


def _across(t: Transfers, inter: str, col, m: int, ready):
    """All-reduce of m bytes across the groups among positions `col` (one per group) by a
    ring or the double binary tree, after `ready` (ids (pieces, len(col)) or None);
    returns when each holds the result."""
    p2 = col.size
    if inter == "ring":
        return ring(t, "allreduce", m, ready=ready, order=col)
    got = [tree_allreduce(t, tree, int(nbytes), p2, order=col, ready=ready)
           for tree, nbytes in zip(binary_trees(p2), split_bytes(m, 2))]
    return np.stack([t.join([got[0][:, j], got[1][:, j]], col[j]) for j in range(p2)], axis=1)


def hierarchical(t: Transfers, m: int, group_size, inter: str = "ring") -> None:
    """Reduce-scatter inside each group (server), all-reduce of each block across groups
    between the ranks of the same local index (each over its own NIC: rail by rail), by a
    ring or a double binary tree, then all-gather inside each group."""
    groups = _groups(t, group_size)
    p2, p1 = groups.shape
    ready = np.full((t.pieces, t.ranks.size), -1, np.int64)
    for grp in groups:                                    # reduce-scatter inside each group
        if p1 > 1:
            ready[:, grp] = ring(t, "reducescatter", m, order=grp)
    done2 = ready.copy()
    block = split_bytes(m, p1)
    for local in range(p1):                               # all-reduce across groups
        col = groups[:, local]
        if p2 >= 2:
            r = ready[:, col] if (ready[:, col] >= 0).all() else None
            done2[:, col] = _across(t, inter, col, int(block[local]), r)
    for grp in groups:                                    # all-gather inside each group
        if p1 > 1:
            r = done2[:, grp] if (done2[:, grp] >= 0).all() else None
            ring(t, "allgather", m, ready=r, order=grp)


_ESTIMATE = per_step(ring_steps)
HIERARCHICAL = Algorithm("hierarchical", ("allreduce",), _ESTIMATE, plan=grouped_chunks,
                         build=lambda t, plan: hierarchical(t, plan.size, plan.group_size, "ring"))
HIERARCHICAL_TREE = Algorithm("hierarchical_tree", ("allreduce",), _ESTIMATE, plan=grouped_chunks,
                              build=lambda t, plan: hierarchical(t, plan.size, plan.group_size, "tree"))
