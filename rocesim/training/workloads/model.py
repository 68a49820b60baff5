"""Training workloads: layers with compute and communication, run for N iterations.

A `Workload` is what ASTRA-sim 1.0's text format describes: per layer, a forward
compute time and the communication it needs, an input-gradient compute and its
communication, a weight-gradient compute and its communication, and a delay after the
weight update.  `add_training` turns it into one dependency graph per run (the core
then releases everything without returning to Python), on every rank:

* compute is sequential on a rank (one GPU stream): each compute step waits for the
  previous one;
* forward: layer i computes, then its forward communication (blocking: layer i+1
  waits for it);
* backward, last layer first: input-gradient compute and communication (blocking),
  weight-gradient compute, then the weight-gradient communication, which is not
  blocking: it overlaps the rest of the backward pass, and only layer i's forward in
  the next iteration waits for it (plus the update delay), as in ASTRA-sim.

Communication groups: `dp` (data-parallel: ranks holding the same model shard), `mp`
(model/tensor-parallel: ranks sharing one model replica) or `all`.  With `mp_size` m,
model-parallel groups are m consecutive ranks and data-parallel groups take one rank
of each (HYBRID_DATA_MODEL, HYBRID_TRANSFORMER); HYBRID_MODEL_DATA swaps them
(data-parallel groups consecutive).  DATA puts everything in one data-parallel group,
MODEL in one model-parallel group.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rocesim.training.collectives import DEFAULT_ALGORITHM, append_collective
from rocesim.config import DEFAULT_FLOW_PRIORITY
from rocesim.errors import ScenarioError
from rocesim.training.graph import Graph, TrainingGraph, TrainingInfo

PARALLELISMS = ("DATA", "MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA", "HYBRID_TRANSFORMER", "MICRO")
COMM_OPS = ("allreduce", "allgather", "alltoall", "reducescatter")


@dataclass(frozen=True)
class Comm:
    """One communication of a layer: a collective of `size` bytes over a group."""

    op: str                  # allreduce, allgather, alltoall, reducescatter
    size: int                # bytes, as nccl-tests counts them
    group: str = "auto"      # dp, mp, all, or auto (by the workload's parallelism)


@dataclass(frozen=True)
class Layer:
    name: str
    fwd_ps: int = 0
    fwd_comm: Comm | None = None
    ig_ps: int = 0
    ig_comm: Comm | None = None
    wg_ps: int = 0
    wg_comm: Comm | None = None
    update_ps: int = 0


@dataclass
class Workload:
    name: str
    parallelism: str
    layers: list[Layer]
    mp_size: int = 1
    source: str = ""          # where the numbers come from

    def __post_init__(self):
        if self.parallelism not in PARALLELISMS:
            raise ScenarioError("parallelism", f"unknown {self.parallelism!r}; valid: {', '.join(PARALLELISMS)}")
        if not self.layers:
            raise ScenarioError("layers", "a workload needs at least one layer")


def groups(parallelism: str, n: int, mp_size: int) -> dict[str, np.ndarray]:
    """Rank-index groups, one row per group: {'dp': ..., 'mp': ..., 'all': [[0..n-1]]}."""
    idx = np.arange(n)
    m = {"DATA": 1, "MICRO": 1, "MODEL": n}.get(parallelism, mp_size)
    if m < 1 or n % m:
        raise ScenarioError("mp_size", f"the {n} ranks do not split into model-parallel groups of {m}")
    if parallelism == "HYBRID_MODEL_DATA":          # data-parallel groups are the consecutive ones
        dp = idx.reshape(m, n // m)
        mp = dp.T.copy()
    else:                                           # model-parallel groups are the consecutive ones
        mp = idx.reshape(n // m, m)
        dp = mp.T.copy()
    return {"dp": dp, "mp": mp, "all": idx[None, :]}


def _group_of(comm: Comm, phase: str, parallelism: str) -> str:
    if comm.group != "auto":
        return comm.group
    if parallelism in ("DATA", "MICRO"):
        return "dp"
    if parallelism == "MODEL":
        return "mp"
    return "dp" if phase == "wg" else "mp"


def add_training(sim, workload: Workload, ranks, iterations: int, **options) -> TrainingInfo:
    """Add `iterations` training iterations of `workload` on `ranks` (GPU ranks of the
    platform; on a plain topology, hosts) to `sim` (options as `training_graph`'s)."""
    return sim.add_workload(training_graph(sim.platform, workload, ranks, iterations,
                                           check=sim.workload_check, nccl=sim.nccl, **options))


def training_graph(platform, workload: Workload, ranks, iterations: int, *, algorithms=None, chunks=1,
                   prio=DEFAULT_FLOW_PRIORITY, start=0, tag=0, job="", check=None, nccl=None) -> TrainingGraph:
    """`iterations` training iterations of `workload` on `ranks` (GPU ranks of `platform`)
    as job `job`; `check(what, nodes)` (e.g. `Simulation.workload_check`) may refuse the
    whole run once its first iteration is built; `nccl` shapes the nccl_* algorithms."""
    ranks = np.asarray(ranks, np.int64)
    hosts = platform.host_of(ranks)
    n = ranks.size
    if iterations < 1:
        raise ScenarioError("iterations", "must be at least 1")
    algorithms = {**DEFAULT_ALGORITHM, **(algorithms or {})}
    grp = groups(workload.parallelism, n, workload.mp_size)
    g = Graph()
    records = []
    last_compute = np.full(n, -1, np.int64)        # per rank: the previous compute node
    pending_wg: dict[int, np.ndarray] = {}         # layer -> per rank: what its next forward waits for

    def compute(duration, it, after=()):
        ids = g.compute(hosts, duration, iteration=it, tag=tag, start=start)
        for a in (last_compute,) + tuple(after):
            ok = a >= 0
            g.depend(ids[ok], a[ok])
        last_compute[:] = ids
        return ids

    def communicate(comm: Comm, phase, it, trigger):
        """One collective per group; returns per rank the node that signals it is done."""
        done = np.full(n, -1, np.int64)
        for members in grp[_group_of(comm, phase, workload.parallelism)]:
            if members.size < 2:
                done[members] = trigger[members]
                continue
            rec = append_collective(g, comm.op, algorithms[comm.op], ranks[members], comm.size, chunks=chunks,
                                 prio=prio, cid=len(records), iteration=it, tag=tag, platform=platform, job=job,
                                    nccl=nccl)
            g.depend(rec.start_nodes, trigger[members])
            done[members] = rec.done_nodes
            records.append(rec)
        return done

    for it in range(iterations):
        if it == 1 and check is not None:
            check(f"{iterations:,} iterations of workload {workload.name or 'layers'}", g.n * iterations)
        after_fwd = ()
        for li, layer in enumerate(workload.layers):
            waits = after_fwd + ((pending_wg.pop(li),) if li in pending_wg else ())
            f = compute(layer.fwd_ps, it, waits)
            after_fwd = ()
            if layer.fwd_comm is not None:
                after_fwd = (communicate(layer.fwd_comm, "fwd", it, f),)
        after_bwd = after_fwd
        for li in range(len(workload.layers) - 1, -1, -1):
            layer = workload.layers[li]
            ig = compute(layer.ig_ps, it, after_bwd)
            after_bwd = ()
            if layer.ig_comm is not None:
                after_bwd = (communicate(layer.ig_comm, "ig", it, ig),)
            wg = compute(layer.wg_ps, it)
            done = wg if layer.wg_comm is None else communicate(layer.wg_comm, "wg", it, wg)
            if layer.update_ps > 0:                  # the weight update, off the compute stream
                upd = g.compute(hosts, layer.update_ps, iteration=it, tag=tag)
                g.depend(upd, done)
                done = upd
            if layer.wg_comm is not None or layer.update_ps > 0:
                pending_wg[li] = done
        if after_bwd:                               # a blocking last communication ends the iteration
            compute(0, it, after_bwd)
    # the last iteration ends when its weight gradients are exchanged
    if pending_wg:
        end = g.compute(hosts, 0, iteration=iterations - 1, tag=tag)
        for done in pending_wg.values():
            g.depend(end, done)
    return TrainingGraph(g, records, iterations, job)
