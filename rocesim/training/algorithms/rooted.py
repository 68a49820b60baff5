"""Broadcast and reduce: from or to the root (rank 0 of the collective).

* ring: a chain r_0 -> r_1 -> ... -> r_{p-1} (broadcast) or back (reduce), each hop after
  the previous one.
* direct: the root to or from every rank at once.
"""
from __future__ import annotations

import numpy as np

from rocesim.training.algorithms.registry import Algorithm, Plan, per_step
from rocesim.training.transfers import Transfers

__all__ = ["CHAIN", "DIRECT"]

ROOTED_OPS = ("broadcast", "reduce")


def _chain(t: Transfers, plan: Plan) -> None:
    p = t.ranks.size
    pos = np.arange(p)
    prev = None
    chain = pos if plan.op == "broadcast" else pos[::-1]
    for i in range(p - 1):
        prev = t.send([chain[i]], [chain[i + 1]], plan.size, () if prev is None else (prev,))


def _direct(t: Transfers, plan: Plan) -> None:
    others = np.arange(1, t.ranks.size)
    root = np.zeros(others.size, int)
    if plan.op == "broadcast":
        t.send(root, others, plan.size)
    else:
        t.send(others, root, plan.size)


_ONCE = per_step(lambda op, p: 1)
CHAIN = Algorithm("ring", ROOTED_OPS, _ONCE, build=_chain)
DIRECT = Algorithm("direct", ROOTED_OPS, _ONCE, build=_direct)
