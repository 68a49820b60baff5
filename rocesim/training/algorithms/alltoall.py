"""All-to-all: direct and pairwise.

Each rank sends m/p to every rank, itself included (nccl-tests), so (p-1)/p of m leaves it.

* direct: every pair at once, NIC-bound: (p-1)/p m/B in an idle network (link rate B).
* pairwise: p-1 steps of m/p, rank i to i+k at step k, each after the previous step's send
  and receive.
"""
from __future__ import annotations

import numpy as np

from rocesim.training.algorithms.registry import Algorithm, Plan, per_step
from rocesim.training.transfers import Transfers

__all__ = ["DIRECT", "PAIRWISE"]


def _direct(t: Transfers, plan: Plan) -> None:
    p = t.ranks.size
    pos = np.arange(p)
    src = np.repeat(pos, p - 1)
    dst = np.tile(pos, p)[np.repeat(pos, p) != np.tile(pos, p)]      # every j != i, in order
    t.send(src, dst, plan.size // p)


def _direct_in_server_ps(t: Transfers, plan: Plan) -> int:
    """Every pair at once inside one server: one round of every rank's m/p to each other."""
    p = t.ranks.size
    a, b = np.repeat(t.ranks, p), np.tile(t.ranks, p)
    a, b = a[a != b], b[a != b]
    return t.rounds_in_server_ps(a, b, np.full(a.size, plan.size // p), 1)


def _pairwise(t: Transfers, plan: Plan) -> None:
    p = t.ranks.size
    pos = np.arange(p)
    prev_send = prev_recv = None
    for k in range(1, p):
        dst = (pos + k) % p
        after = () if prev_send is None else (prev_send, prev_recv)
        ids = t.send(pos, dst, plan.size // p, after)
        prev_send = ids
        prev_recv = ids[:, (pos - k) % p]


_EACH_OTHER = per_step(lambda op, p: p - 1)
DIRECT = Algorithm("direct", ("alltoall",), _EACH_OTHER, build=_direct, closed_form=_direct_in_server_ps)
PAIRWISE = Algorithm("pairwise", ("alltoall",), _EACH_OTHER, build=_pairwise)
