"""Parallelism of a training job: tensor (TP), context (CP), expert (EP), data (DP) and
pipeline (PP) parallel groups mapped onto the job's ranks.

The job's ranks form a grid of tp x cp x dp x pp; `order` says which dimension varies
fastest, as Megatron-LM's `--order`/RankGenerator does (default "tp-cp-dp-pp": TP
neighbours are consecutive ranks, so with ranks numbered server-major a TP group of at
most a server's GPUs stays inside one server, on the scale-up domain). Expert
parallelism reuses the data-parallel ranks as Megatron-LM does: each DP group splits
into DP/EP groups of EP consecutive members (an MoE layer's all-to-all runs inside those),
and the members with the same place in their EP group hold the same experts (the
expert-data-parallel group, which all-reduces their gradients).

`schedule` orders one pipeline stage's forward and backward passes of its micro-batches
(1F1B or GPipe).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rocesim.errors import ScenarioError

GRID = ("tp", "cp", "dp", "pp")


@dataclass(frozen=True)
class Parallelism:
    """Degrees of parallelism and the order of the rank grid (fastest first)."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    cp: int = 1
    ep: int = 1
    order: str = "tp-cp-dp-pp"

    def __post_init__(self):
        for name in GRID + ("ep",):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ScenarioError(f"parallelism.{name}", f"expected a positive integer, got {v!r}")
        dims = self.order.split("-")
        if sorted(dims) != sorted(GRID):
            raise ScenarioError("parallelism.order", f"expected the dimensions {', '.join(GRID)} joined by '-' "
                                                     f"(fastest first), got {self.order!r}")
        if self.dp % self.ep:
            raise ScenarioError("parallelism.ep", f"ep={self.ep} must divide dp={self.dp} (experts are spread "
                                                  "over data-parallel ranks)")

    @classmethod
    def for_ranks(cls, n: int, *, tp=1, pp=1, cp=1, ep=1, order="tp-cp-dp-pp") -> "Parallelism":
        """The parallelism on `n` ranks: dp is what is left after tp x cp x pp."""
        rest = tp * pp * cp
        if n % rest:
            raise ScenarioError("parallelism", f"tp x cp x pp = {rest} does not divide the {n} ranks")
        return cls(tp=tp, pp=pp, dp=n // rest, cp=cp, ep=ep, order=order)

    @property
    def size(self) -> int:
        return self.tp * self.cp * self.dp * self.pp

    def coords(self) -> dict[str, np.ndarray]:
        """Per job rank index, its coordinate in each dimension."""
        dims = self.order.split("-")
        idx = np.arange(self.size)
        out = {}
        for d in dims:
            n = getattr(self, d)
            out[d] = idx % n
            idx = idx // n
        return out

    def groups(self, dim: str) -> np.ndarray:
        """The groups of one dimension (tp, cp, dp, pp, ep, edp: expert data parallel), one row
        each, as job rank indices in order of their coordinate; rows in order of their first rank."""
        c = self.coords()
        if dim in ("ep", "edp"):
            dp = self.groups("dp").reshape(-1, self.dp // self.ep, self.ep)
            rows = dp.reshape(-1, self.ep) if dim == "ep" else dp.transpose(0, 2, 1).reshape(-1, self.dp // self.ep)
            return rows[np.argsort(rows[:, 0], kind="stable")]
        if dim not in GRID:
            raise ScenarioError("parallelism", f"unknown dimension {dim!r}")
        others = [d for d in GRID if d != dim]
        key = np.ravel_multi_index([c[d] for d in others], [getattr(self, d) for d in others])
        rows = np.lexsort((c[dim], key)).reshape(-1, getattr(self, dim))
        return rows[np.argsort(rows[:, 0], kind="stable")]


SCHEDULES = ("1f1b", "gpipe")


def schedule(kind: str, stage: int, stages: int, micro_batches: int) -> list[tuple[str, int]]:
    """The order of forward ('F', j) and backward ('B', j) passes on one pipeline stage."""
    m = micro_batches
    if kind == "gpipe":
        return [("F", j) for j in range(m)] + [("B", j) for j in range(m)]
    warm = min(stages - stage - 1, m)
    ops = [("F", j) for j in range(warm)]
    for j in range(m - warm):
        ops += [("F", warm + j), ("B", j)]
    return ops + [("B", j) for j in range(m - warm, m)]


def pipeline_order(kind: str, stages: int, micro_batches: int):
    """Every stage's `schedule` merged into one order that respects the transfers between
    stages: stage after stage, each as far as it can go, a forward pass of micro-batch j
    after the previous stage's and a backward pass after the next stage's.  Yields
    (stage, 'F' or 'B', j, whether it is the stage's last pass)."""
    plans = [schedule(kind, s, stages, micro_batches) for s in range(stages)]
    cursor = [0] * stages
    done = set()
    while any(cursor[s] < len(plans[s]) for s in range(stages)):
        progressed = False
        for s in range(stages):
            while cursor[s] < len(plans[s]):
                step, j = plans[s][cursor[s]]
                source = s - 1 if step == "F" else s + 1
                if 0 <= source < stages and (step, source, j) not in done:
                    break
                yield s, step, j, cursor[s] == len(plans[s]) - 1
                done.add((step, s, j))
                cursor[s] += 1
                progressed = True
        if not progressed:
            raise ScenarioError("pipeline", "the pipeline schedule waits for itself")  # cannot happen
