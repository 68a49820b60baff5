"""Recursive halving then doubling (all-reduce, reduce-scatter, all-gather; p a power of two).

In an idle network (p ranks, m bytes, link rate B, per-step latency alpha; Thakur et al.,
IJHPCA 2005): 2 log2(p) alpha + 2 (p-1)/p m/B for all-reduce, half of it for
reduce-scatter (the halving) or all-gather (the doubling) alone.
"""
from __future__ import annotations

import numpy as np

from rocesim.errors import ScenarioError
from rocesim.training.algorithms.registry import Algorithm, Plan, per_step
from rocesim.training.algorithms.ring import RING_OPS
from rocesim.training.transfers import Transfers

__all__ = ["HALVING_DOUBLING"]


def _halving_doubling(t: Transfers, plan: Plan) -> None:
    p, m, op = t.ranks.size, plan.size, plan.op
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


HALVING_DOUBLING = Algorithm("halving_doubling", RING_OPS,
                             per_step(lambda op, p: 2 * max(1, (p - 1).bit_length())), build=_halving_doubling)
