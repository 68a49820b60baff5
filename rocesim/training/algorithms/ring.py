"""The ring (all-reduce, reduce-scatter, all-gather) and the bidirectional ring.

Times in an idle network, p ranks, m bytes, link rate B, per-step latency alpha (Thakur et
al., IJHPCA 2005):

* ring (all-reduce = reduce-scatter + all-gather): 2(p-1)(alpha + m/(pB));
  reduce-scatter or all-gather alone: (p-1)(alpha + m/(pB)).  (The ring's broadcast and
  reduce, a chain, are in `rooted`.)
* ring_bidir: half the data around the ring each way.

`ring` is also one stage of the hierarchical and dimensional all-reduces.
"""
from __future__ import annotations

import numpy as np

from rocesim.training.algorithms.registry import Algorithm, Plan, per_step
from rocesim.training.chunks import split_bytes
from rocesim.training.transfers import Transfers

__all__ = ["ring", "ring_in_server_ps", "RING", "RING_BIDIR", "RING_OPS", "ring_steps"]

RING_OPS = ("allreduce", "reducescatter", "allgather")


def ring_steps(op: str, p: int) -> int:
    """The steps of a ring `op` on p ranks: all-reduce runs the reduce-scatter's straight
    into the all-gather's."""
    return 2 * (p - 1) if op == "allreduce" else p - 1


def _steps(t: Transfers, order, blocks, n_steps, ready=None):
    """`n_steps` ring steps around `order` (positions): at step s the rank at place i
    sends block (i - s) mod p to place i+1, after what it received at step s-1 (at
    step 0, after `ready`, ids (pieces, p) per place, if given).  All-reduce runs the
    reduce-scatter steps straight into the all-gather ones: after p-1 steps place i
    holds the reduced block i+1, which is what step p-1 sends.  `ready` may be a tuple of
    such arrays (step 0 waits for all).  Returns the last step's ids."""
    p = len(order)
    nxt = np.roll(order, -1)
    pos = np.arange(p)
    prev = None
    for s in range(n_steps):
        after = () if ready is None else tuple(ready) if isinstance(ready, tuple) else (ready,)
        if prev is not None:
            after += (np.roll(prev, 1, axis=1),)        # what place i got from i-1
        prev = t.send(order, nxt, blocks[(pos - s) % p], after)
    return prev


def ring(t: Transfers, op: str, m: int, ready=None, order=None) -> np.ndarray:
    """Ring reduce-scatter / all-gather / all-reduce of m bytes over positions `order`
    (default: every rank, in order); returns the ids (pieces, p) each place received last
    (indexed by place)."""
    order = np.arange(t.ranks.size) if order is None else np.asarray(order)
    blocks = split_bytes(m, len(order))
    last = _steps(t, order, blocks, ring_steps(op, len(order)), ready)
    return np.roll(last, 1, axis=1)            # place i received from place i-1


def ring_in_server_ps(t: Transfers, op: str, m: int, step_latency: int = 0) -> int:
    """The ring's time inside one server: its steps, each moving the largest block from
    every rank to the next at once."""
    a, b = t.ranks, np.roll(t.ranks, -1)
    nbytes = np.full(a.size, split_bytes(m, a.size).max())
    return t.rounds_in_server_ps(a, b, nbytes, ring_steps(op, a.size), step_latency)


def _bidirectional(t: Transfers, plan: Plan) -> None:
    half = split_bytes(plan.size, 2)
    ring(t, plan.op, int(half[0]))
    ring(t, plan.op, int(half[1]), order=np.arange(t.ranks.size)[::-1])


RING = Algorithm("ring", RING_OPS, per_step(ring_steps), build=lambda t, plan: ring(t, plan.op, plan.size),
                 closed_form=lambda t, plan: ring_in_server_ps(t, plan.op, plan.size))
RING_BIDIR = Algorithm("ring_bidir", RING_OPS, per_step(lambda op, p: 2 * ring_steps(op, p)), build=_bidirectional)
