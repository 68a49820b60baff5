"""`auto`: the algorithm NCCL's tuning model picks (src/graph/tuning.cc, ncclTopoTuneModel,
Simple protocol; src/enqueue.cc, updateCollCostTable and topoGetAlgoInfo).

NCCL estimates each algorithm it has for the collective (latency + bytes over the
algorithm bandwidth) and runs the fastest.  Here the candidates are the registered
algorithms of the operation with a tuned-time model (`Algorithm.tuned_us`) that are
available on the ranks (`Algorithm.available`): NCCL's ring, its tree for all-reduce on
servers holding the same number of the communicator's GPUs, NVLS where the scale-up switch
reduces.
"""
from __future__ import annotations

import numpy as np

from rocesim.errors import ScenarioError
from rocesim.training.algorithms.nccl_ring import nccl_estimate
from rocesim.training.algorithms.registry import Algorithm, algorithms_for, lookup
from rocesim.training.algorithms.ring import RING_OPS

__all__ = ["AUTO", "auto_algorithm", "tuned_time_us"]


def tuned_time_us(algorithm: str, op: str, platform, ranks, nbytes: int) -> float:
    """NCCL's estimate of a collective's time with `algorithm` (`Algorithm.tuned_us`)."""
    return lookup(op, algorithm).tuned_us(op, platform, np.asarray(ranks, np.int64), nbytes)


def auto_algorithm(op: str, platform, ranks, nbytes: int) -> str:
    """The algorithm NCCL's tuning model picks for `op` of `nbytes` on `ranks`: the fastest by
    its tuned time among the available ones, in registration order on a tie."""
    candidates = [a for a in algorithms_for(op) if a.tuned_us is not None and a.available(op, platform, ranks)]
    if not candidates:
        raise ScenarioError("algorithm", f"auto: no {op} algorithm with a tuned time is available on these ranks")
    if len(candidates) == 1:
        return candidates[0].name
    return min(candidates, key=lambda a: a.tuned_us(op, platform, ranks, nbytes)).name


AUTO = Algorithm("auto", RING_OPS, nccl_estimate, pick=auto_algorithm)
