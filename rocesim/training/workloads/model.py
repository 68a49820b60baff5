"""Training workloads: layers with compute and communication, run for N iterations.

A `Workload` is what ASTRA-sim 1.0's text format (and SimAI's extension of it,
`rocesim.training.workloads.simai`) describes: per layer, a forward compute time and the
communication it needs, an input-gradient compute and its communication, a
weight-gradient compute and its communication, and a delay after the weight update.
`training_graph` turns it into one dependency graph per run (the core then releases
everything without returning to Python), on every rank; compute is sequential on a rank
(one GPU stream: each compute step waits for the previous one).  Two dependency rules,
`dependencies`:

* ``overlap`` (ASTRA-sim 1.0, rocesim's default for its files): forward: layer i computes,
  then its forward communication (blocking: layer i+1 waits for it); backward, last layer
  first: input-gradient compute and communication, weight-gradient compute (overlapping
  the input-gradient communication), then the weight-gradient communication, which is not
  blocking: it overlaps the rest of the backward pass, and only layer i's forward in the
  next iteration waits for it (plus the update delay).
* ``simai`` (SimAI 1.6, astra-sim-alibabacloud/astra-sim/workload/Workload.cc
  `iterate_hybrid_parallel_Transformer_fwd_in_bckwd`, Layer.cc `call`): the same, except
  that a layer's weight-gradient compute waits for its input-gradient communication (the
  loop issues it Blocking and only moves on to the weight gradient when it is done), the
  delay (the last field) follows every communication (fwd, ig and wg: `Layer::call`
  registers each *_Comm_Finished_After_Delay after `weight_grad_update_time`), and a
  forward communication below 4096 B is raised to 4096 B.

Communication groups: `dp` (data-parallel: ranks holding the same model shard), `mp`
(model/tensor-parallel: ranks sharing one model replica), `ep` (expert-parallel), `dp_ep`
(expert-data-parallel) or `all`.  With `mp_size` m, model-parallel groups are m
consecutive ranks and data-parallel groups take one rank of each (HYBRID_DATA_MODEL,
HYBRID_TRANSFORMER); HYBRID_MODEL_DATA swaps them (data-parallel groups consecutive).
DATA puts everything in one data-parallel group, MODEL in one model-parallel group.
HYBRID_TRANSFORMER's groups are those of `rocesim.training.parallelism.Parallelism` with
order tp-cp-dp-pp (tp = m): with one pipeline stage they are SimAI's (MockNcclGroup.cc:
TP consecutive, DP strided by TP, EP = consecutive members of a DP group, DP_EP = the
members of a DP group strided by EP).

Pipeline parallelism (`pp` > 1, SimAI/AICB files): the job's ranks form `pp` stages (the
slowest dimension of the grid) that all run the file's layers; the layers after the first
`prologue` ones are `ga` micro-batches; every stage runs its micro-batches in `pipeline`
order (gpipe: the file's own order, all forwards then all backwards; or 1f1b), after each
forward each rank sends `pp_comm` bytes to its peer in the next stage and after each
backward to its peer in the previous one; a stage's pass of micro-batch j waits for that
transfer, which makes the pipeline's bubbles.  The prologue layers (AICB's gradient
all-gather/reduce-scatter, layernorm and embedding gradients) run their forward before the
first micro-batch and their backward after the last; the epilogue layers (AICB's
cross-entropy and optimizer all-reduces) run their forward and backward right after the
last micro-batch's forward (in the file's order with gpipe).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from rocesim.training.algorithms import DEFAULT_ALGORITHM
from rocesim.training.collectives import (CollectiveBatch, Collectives, Templates, check_size, add_sendrecv,
                                         append_collectives, closed_form_rows, node_rows)
from rocesim.config import DEFAULT_FLOW_PRIORITY
from rocesim.errors import ScenarioError
from rocesim.memory import WorkloadEstimated
from rocesim.training.graph import EmptyCollectives, Graph, Progress, TrainingGraph
from rocesim.training.nccl import PXN_DEFAULT
from rocesim.training.parallelism import SCHEDULES, Parallelism, pipeline_order

PARALLELISMS = ("DATA", "MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA", "HYBRID_TRANSFORMER", "MICRO")
# allreduce_alltoall: an all-reduce, then an all-to-all of the same size on the same group
COMM_OPS = ("allreduce", "allgather", "alltoall", "reducescatter", "broadcast", "allreduce_alltoall")
GROUPS = ("auto", "dp", "mp", "ep", "dp_ep", "all")
DEPENDENCIES = ("overlap", "simai")
SIMAI_MIN_FWD_BYTES = 4096      # Workload.cc iterate_hybrid_parallel_Transformer_fwd_in_bckwd


@dataclass(frozen=True)
class Comm:
    """One communication of a layer: a collective of `size` bytes over a group."""

    op: str                  # one of COMM_OPS
    size: int                # bytes, as nccl-tests counts them
    group: str = "auto"      # one of GROUPS (auto: by the workload's parallelism and the phase)


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
    # "file:line" of a layer read from a file (keys errors about its numbers; not part of its value)
    where: str = field(default="", compare=False)


@dataclass
class Workload:
    """Layers and how they are spread over the ranks (see the module's docstring).

    `ep_size`, `pp`, `ga`, `pp_comm`, `prologue` and the checkpoints come from SimAI/AICB
    headers; `all_gpus` (when known) must be the job's rank count; `where` ("file:line")
    keys errors about the header found when the workload meets its ranks."""

    name: str
    parallelism: str
    layers: list[Layer]
    mp_size: int = 1
    source: str = ""          # where the numbers come from
    ep_size: int = 1
    pp: int = 1
    vpp: int = 1              # read, not used: SimAI only scales its analytic bubble with it
    ga: int = 1               # micro-batches per iteration (the file lists each one's layers)
    all_gpus: int | None = None
    pp_comm: int = 0          # bytes each rank sends to its peer stage per micro-batch and direction
    prologue: int = 0         # layers run once per iteration before the ga micro-batches (pp > 1)
    epilogue: int = 0         # layers run once per iteration after them (pp > 1)
    checkpoints: frozenset = field(default_factory=frozenset)
    checkpoint_initiates: frozenset = field(default_factory=frozenset)
    where: str = ""

    def __post_init__(self):
        if self.parallelism not in PARALLELISMS:
            raise ScenarioError("parallelism", f"unknown {self.parallelism!r}; valid: {', '.join(PARALLELISMS)}")
        if not self.layers:
            raise ScenarioError("layers", "a workload needs at least one layer")

    def micro_batches(self) -> list[list[int]]:
        """The layer indices of each of the `ga` micro-batches (between the prologue and the epilogue)."""
        body = np.arange(self.prologue, len(self.layers) - self.epilogue)
        return [b.tolist() for b in np.split(body, self.ga)]


def groups(parallelism: str, n: int, mp_size: int, ep: int = 1, pp: int = 1, key: str = "mp_size"
           ) -> dict[str, np.ndarray]:
    """Rank-index groups, one row per group: {'dp', 'mp', 'ep', 'dp_ep', 'all'}; with `pp`
    stages, also 'pp' (row k: the k-th rank of every stage, one per stage in stage order).
    Errors are keyed `key`."""
    idx = np.arange(n)
    m = {"DATA": 1, "MICRO": 1, "MODEL": n}.get(parallelism, mp_size)
    if m < 1 or n % m:
        raise ScenarioError(key, f"the {n} ranks do not split into model-parallel groups of {m}")
    if parallelism != "HYBRID_TRANSFORMER" and (ep, pp) != (1, 1):
        raise ScenarioError(key, f"expert and pipeline parallelism need HYBRID_TRANSFORMER, not {parallelism}")
    if parallelism == "HYBRID_MODEL_DATA":          # data-parallel groups are the consecutive ones
        dp = idx.reshape(m, n // m)
        mp = dp.T.copy()
        return {"dp": dp, "mp": mp, "ep": idx[:, None], "dp_ep": dp, "all": idx[None, :], "pp": idx[:, None]}
    if n % (m * pp) or (n // (m * pp)) % ep:
        raise ScenarioError(key, f"{n} ranks do not split into tp={m} x pp={pp} x dp with ep={ep} dividing dp "
                                 f"(dp = ranks / (tp pp) = {n / (m * pp):g})")
    par = Parallelism(tp=m, pp=pp, dp=n // (m * pp), ep=ep)
    return {"dp": par.groups("dp"), "mp": par.groups("tp"), "ep": par.groups("ep"), "dp_ep": par.groups("edp"),
            "all": idx[None, :], "pp": par.groups("pp")}


def _group_of(comm: Comm, phase: str, parallelism: str) -> str:
    if comm.group != "auto":
        return comm.group
    if parallelism in ("DATA", "MICRO"):
        return "dp"
    if parallelism == "MODEL":
        return "mp"
    return "dp" if phase == "wg" else "mp"


def training_graph(platform, workload: Workload, ranks, iterations: int, *, algorithms=None, chunks=1,
                   prio=DEFAULT_FLOW_PRIORITY, start=0, tag=0, job="", guard=None, dependencies="overlap",
                   pipeline="gpipe", nccl=None, pxn=PXN_DEFAULT, fold_tp=False, fold_dp=0) -> TrainingGraph:
    """`iterations` training iterations of `workload` on `ranks` (GPU ranks of `platform`)
    as job `job`, with `dependencies` (overlap or simai, see the module's docstring) and,
    with pipeline stages, the `pipeline` schedule (gpipe or 1f1b); `guard` (a
    `rocesim.memory.WorkloadGuard`, e.g. `Simulation.workload_guard`) may refuse the whole
    run once its first iteration is built, or as it goes from its projection; `nccl`
    (`Simulation.nccl`) shapes the nccl_* algorithms; `pxn`: NCCL's PXN (rail-aligned
    forwarding).  Add the graph it returns with `Simulation.add_workload`.

    `fold_tp` (large jobs in flow mode), when every model-parallel (mp) group sits inside
    one server: the ranks of each mp group run as one stream (one compute or delay node
    per group and step) and each mp collective with a closed form inside the server
    (`collectives.closed_form_rows`) is one node of that duration.  It gives every rank the
    times it would have when whatever makes the ranks of an mp group differ (collectives
    of other groups, transfers between stages) is followed by an mp collective before
    the next communication of another group, as in AICB's files; otherwise a rank waits
    for the slowest of its mp group at its next compute.

    `fold_dp` = n > 0 (large jobs in flow mode) simulates only the first n data-parallel
    replicas of each stage (n a multiple of the expert parallelism dividing dp): a rank
    at data-parallel place j runs as the rank at place j mod n of its data-parallel
    group (the same stream), the collectives of groups made only of the others (TP, EP
    all-to-alls) and their transfers between stages are left out, and the collectives of
    groups across the replicas (the data-parallel gradients) are simulated on every rank.
    It assumes that the replicas left out would not slow the simulated ones down in the
    fabric (their all-to-alls and stage transfers are not there to share links with);
    collectives.csv lists the simulated groups only."""
    if iterations < 1:
        raise ScenarioError("iterations", "must be at least 1")
    if dependencies not in DEPENDENCIES:
        raise ScenarioError("dependencies", f"unknown {dependencies!r}; valid: {', '.join(DEPENDENCIES)}")
    if pipeline not in SCHEDULES:
        raise ScenarioError("pipeline", f"unknown schedule {pipeline!r}; valid: {', '.join(SCHEDULES)}")
    b = _Builder(platform, workload, np.asarray(ranks, np.int64), {**DEFAULT_ALGORITHM, **(algorithms or {})},
                 chunks, prio, start, tag, job, dependencies == "simai", nccl, pxn, fold_tp, fold_dp)
    wl = workload
    empty = empty_collectives(wl, b.grp)
    # progress in layer passes (each stage runs every layer forward and backward)
    b.progress = Progress(guard, f"{iterations:,} iterations of workload {wl.name or 'layers'}",
                          iterations * wl.pp * 2 * len(wl.layers),
                          hint="" if b.fold and fold_dp else "; the workload keys fold_tp and fold_dp shrink it")
    try:
        for it in range(iterations):
            if it == 1:
                b.progress.check(b.g.n * iterations)
            if wl.pp == 1:
                everyone = np.arange(b.n)
                order = list(range(len(wl.layers)))
                carry = b.backward(order[::-1], everyone, it, b.forward(order, everyone, it, ()))
                if carry:                               # a blocking last communication ends the iteration
                    b.compute(everyone, 0, it, carry)
            else:
                b.pipeline_iteration(it, pipeline)
    except WorkloadEstimated as sized:                  # (rocesim check: sized, not built)
        sized.empty = empty
        raise
    # the last iteration ends when its weight gradients are exchanged
    if b.pending:
        end = b.g.compute(b.hosts, 0, iteration=iterations - 1, tag=tag)
        for done in b.pending.values():
            ok = done >= 0
            b.g.depend(end[ok], done[ok])
    return TrainingGraph(b.g, b.records, iterations, job, empty)


def check_sizes(wl: Workload, platform) -> None:
    """Refuse a workload whose communications could not finish within the time horizon on
    `platform` (`collectives.check_size`), keyed by the file:line that declares them, before
    any is built."""
    for layer in {id(layer): layer for layer in wl.layers}.values():     # (a preset lists the same layers again)
        for comm in (layer.fwd_comm, layer.ig_comm, layer.wg_comm):
            if comm is not None:
                check_size(comm.size, platform, layer.where or wl.where or "size")
    check_size(wl.pp_comm, platform, wl.where or "pp_comm")


def empty_collectives(wl: Workload, grp: dict) -> EmptyCollectives | None:
    """The communications `wl` declares (per layer and phase) whose group (a row of
    `grp[group]`, `groups`) holds one GPU: none is built (`_Builder.communicate`), as SimAI
    runs a collective of one rank as no communication; None when there is none."""
    if all(grp[group].shape[1] >= 2 for group in GROUPS if group != "auto"):
        return None
    declared, counts = 0, {}
    layers = {id(layer): layer for layer in wl.layers}            # (a preset lists the same layers again)
    for key, times in Counter(map(id, wl.layers)).items():
        layer = layers[key]
        for phase, comm in (("fwd", layer.fwd_comm), ("ig", layer.ig_comm), ("wg", layer.wg_comm)):
            if comm is None:
                continue
            declared += times
            group = _group_of(comm, phase, wl.parallelism)
            if grp[group].shape[1] < 2:
                counts[(comm.op, group)] = counts.get((comm.op, group), 0) + times
    return EmptyCollectives(wl.name or "layers", declared, counts) if counts else None


class _Builder:
    """The graph of one job under construction: per rank, the last node of its compute
    stream and, per (stage, layer), what that layer's next forward waits for.  Per-rank
    arrays span the job's ranks (-1: nothing); passes run on `members` (a stage)."""

    def __init__(self, platform, wl: Workload, ranks, algorithms, chunks, prio, start, tag, job, simai, nccl=None,
                 pxn=PXN_DEFAULT, fold_tp=False, fold_dp=0):
        self.platform, self.wl, self.ranks = platform, wl, ranks
        self.n = ranks.size
        where = wl.where or "mp_size"
        if wl.all_gpus is not None and wl.all_gpus != self.n:
            raise ScenarioError(where, f"all_gpus: {wl.all_gpus} but the job has {self.n} ranks; give the "
                                       f"workload {wl.all_gpus} GPUs (gpus: {wl.all_gpus})")
        self.grp = groups(wl.parallelism, self.n, wl.mp_size, wl.ep_size, wl.pp, where)
        check_sizes(wl, platform)
        self.stage_of = np.zeros(self.n, np.int64)
        self.stage_of[self.grp["pp"]] = np.arange(wl.pp)[None, :]
        self.hosts = platform.host_of(ranks)
        self.algorithms, self.chunks, self.prio, self.start, self.tag, self.job = \
            algorithms, chunks, prio, start, tag, job
        self.simai, self.nccl, self.pxn = simai, nccl, pxn
        self.g = Graph()
        self.templates = Templates(platform)
        self.records = Collectives()
        self.progress = Progress(None, "", 1)
        self.last = np.full(self.n, -1, np.int64)       # per rank: the previous compute node
        self.pending: dict[tuple[int, int], np.ndarray] = {}   # (stage, layer) -> what its next forward waits for
        # the ranks' streams, one row each: every rank alone, or with fold_tp each mp group
        mp = self.grp["mp"]
        self.fold = bool(fold_tp) and mp.shape[1] > 1 and chunks == 1 and \
            bool((platform.server[ranks[mp]] == platform.server[ranks[mp[:, :1]]]).all())
        units = mp if self.fold else np.arange(self.n)[:, None]
        # fold_dp: each rank's representative (the rank at its place mod fold_dp in its DP group)
        self.rep_of = np.arange(self.n)
        if fold_dp:
            dp = self.grp["dp"]
            if fold_dp < 1 or dp.shape[1] % fold_dp or fold_dp % wl.ep_size:
                raise ScenarioError("fold_dp", f"expected a multiple of ep={wl.ep_size} dividing dp={dp.shape[1]}, "
                                               f"got {fold_dp}")
            self.rep_of[dp] = dp[:, np.arange(dp.shape[1]) % fold_dp]
            # a stream: a representative unit then the units that run as it
            key = self.rep_of[units[:, 0]]
            order = np.lexsort((np.arange(len(units)), key != units[:, 0], key))
            units = units[order].reshape(int((key == units[:, 0]).sum()), -1)
        self.kept = self.rep_of == np.arange(self.n)
        self.streams = units
        self._forms: dict = {}                           # (op, bytes) -> closed form in an mp group, or None

    def _full(self, members, ids) -> np.ndarray:
        out = np.full(self.n, -1, np.int64)
        out[members] = ids
        return out

    def _after(self, ids, members, parents):
        p = parents[members]
        ok = p >= 0
        self.g.depend(ids[ok], p[ok])

    def _rows(self, members) -> np.ndarray:
        """The streams (rows of ranks) of `members` (whole streams)."""
        if self.streams.shape[1] == 1:
            return members[:, None]
        inside = np.zeros(self.n, bool)
        inside[members] = True
        return self.streams[inside[self.streams[:, 0]]]

    def compute(self, members, duration, it, after=()) -> np.ndarray:
        """A compute step on every stream of `members` after its last one and `after`."""
        rows = self._rows(members)
        ids = self.g.compute_on_streams(self.hosts, rows, self.last, duration, after=tuple(after), iteration=it,
                                        tag=self.tag, start=self.start)
        return self._full(rows, ids[:, None])

    def delay(self, members, duration, it, done) -> np.ndarray:
        """A delay off the compute stream after `done` (the update delay)."""
        rows = self._rows(members)
        ids = self.g.compute(self.hosts[rows[:, 0]], duration, iteration=it, tag=self.tag)
        self.g.depend_rows(ids, done[rows])
        return self._full(rows, ids[:, None])

    def _closed_form(self, op, size):
        """(algorithm, ps) of `op` of `size` bytes in every mp group (closed forms inside a
        server, the same wherever the group sits), or None."""
        if (op, size) not in self._forms:
            self._forms[(op, size)] = closed_form_rows(op, self.algorithms[op], self.ranks[self.grp["mp"]], size,
                                                       platform=self.platform, chunks=self.chunks, nccl=self.nccl)
        return self._forms[(op, size)]

    def communicate(self, comm: Comm, phase, it, trigger, members, update_ps=0) -> np.ndarray:
        """One collective per group of the stage of `members`; per rank, the node that says it is done."""
        done = trigger.copy()
        group = _group_of(comm, phase, self.wl.parallelism)
        rows = self.grp[group]
        in_stage = np.zeros(self.n, bool)
        in_stage[members] = True
        size = max(comm.size, SIMAI_MIN_FWD_BYTES) if self.simai and phase == "fwd" else comm.size
        rows = rows[in_stage[rows[:, 0]]]
        left_out = ~self.kept[rows].any(axis=1)               # groups of replicas fold_dp leaves out
        rows, left_out = rows[~left_out], rows[left_out]
        ops = ("allreduce", "alltoall") if comm.op == "allreduce_alltoall" else (comm.op,)
        size = max(size, rows.shape[1])
        forms = [self._closed_form(op, size) for op in ops] if self.fold and group == "mp" else [None]
        if rows.shape[1] >= 2 and rows.shape[0] and None not in forms:     # one node per mp group (fold_tp)
            for op, (algorithm, ps) in zip(ops, forms):
                cids = len(self.records) + np.arange(len(rows))
                ids = self.g.compute(self.hosts[rows[:, 0]], ps, collective=cids, iteration=it, tag=self.tag)
                self.g.depend_rows(ids, done[rows])
                done[rows] = ids[:, None]
                self.records.append(CollectiveBatch(cids, op, algorithm, self.ranks[rows], size, ids[:, None],
                                                    ids[:, None], np.zeros((len(rows), 0), np.int64), self.job))
        elif rows.shape[1] >= 2 and rows.shape[0]:
            # allreduce_alltoall: each group's all-reduce then its all-to-all, group after group
            for batch in ([r[None, :] for r in rows] if len(ops) > 1 else [rows]):
                for op in ops:
                    recs = append_collectives(self.g, op, self.algorithms[op], self.ranks[batch], size,
                                              cids=len(self.records) + np.arange(len(batch)),
                                              templates=self.templates, chunks=self.chunks, prio=self.prio,
                                              iteration=it, tag=self.tag, platform=self.platform, job=self.job,
                                              nccl=self.nccl, pxn=self.pxn)
                    self.g.depend(node_rows(recs, "start_nodes"), done[batch])
                    done[batch] = node_rows(recs, "done_nodes")
                    self.records.extend(recs)
        done[left_out] = done[self.rep_of[left_out]]
        if update_ps > 0:
            done = self.delay(members, update_ps, it, done)
        return done

    def forward(self, layers, members, it, carry) -> tuple:
        """Forward passes of `layers` (indices) on `members`; returns what the next step waits for."""
        s = int(self.stage_of[members[0]])
        for li in layers:
            self.progress.advance(self.g.n)
            layer = self.wl.layers[li]
            waits = tuple(carry) + ((self.pending.pop((s, li)),) if (s, li) in self.pending else ())
            f = self.compute(members, layer.fwd_ps, it, waits)
            carry = ()
            if layer.fwd_comm is not None:
                carry = (self.communicate(layer.fwd_comm, "fwd", it, f, members,
                                          layer.update_ps if self.simai else 0),)
        return carry

    def backward(self, layers, members, it, carry) -> tuple:
        """Backward passes of `layers` (indices, in the order they run) on `members`."""
        s = int(self.stage_of[members[0]])
        wl = self.wl
        for li in layers:
            if li in wl.checkpoint_initiates:        # recompute the forward from the checkpoint below
                first = max(c for c in wl.checkpoints if c < li)
                carry = self.forward(range(first, li), members, it, carry)
            self.progress.advance(self.g.n)
            layer = wl.layers[li]
            ig = self.compute(members, layer.ig_ps, it, carry)
            carry = ()
            if layer.ig_comm is not None:
                carry = (self.communicate(layer.ig_comm, "ig", it, ig, members,
                                          layer.update_ps if self.simai else 0),)
            if self.simai:                           # the weight gradient waits for the ig communication
                wg = self.compute(members, layer.wg_ps, it, carry)
                carry = ()
                if layer.wg_comm is not None:
                    self.pending[(s, li)] = self.communicate(layer.wg_comm, "wg", it, wg, members, layer.update_ps)
                continue
            wg = self.compute(members, layer.wg_ps, it)
            done = wg if layer.wg_comm is None else self.communicate(layer.wg_comm, "wg", it, wg, members)
            if layer.update_ps > 0:                  # the weight update, off the compute stream
                done = self.delay(members, layer.update_ps, it, done)
            if layer.wg_comm is not None or layer.update_ps > 0:
                self.pending[(s, li)] = done
        return carry

    def send(self, src, dst, it) -> np.ndarray:
        """Each rank of `src` sends `pp_comm` bytes to the same-place rank of `dst` (after its
        stream's last node); returns, per rank of `dst`, the node its data arrived at."""
        keep = self.kept[src]                                     # (fold_dp: the simulated replicas)
        src, dst, mirror = src[keep], dst[keep], dst[~keep]
        rec = add_sendrecv(self.g, self.ranks[src], self.ranks[dst], int(self.wl.pp_comm), platform=self.platform,
                           prio=self.prio, cid=len(self.records), iteration=it, tag=self.tag, chunks=self.chunks,
                           pxn=self.pxn, job=self.job, nccl=self.nccl)
        k = src.size
        self._after(rec.start_nodes[:k], src, self.last)
        self.g.depend(rec.start_nodes[k:], rec.start_nodes[:k])   # (not roots of the graph)
        self.records.append(rec)
        out = self._full(dst, rec.done_nodes[k:])
        out[mirror] = out[self.rep_of[mirror]]
        return out

    def pipeline_iteration(self, it, kind):
        """One iteration of every stage's schedule, in an order that respects the transfers
        (`parallelism.pipeline_order`)."""
        wl = self.wl
        stages = self.grp["pp"].T                    # row s: the ranks of stage s, peers column by column
        blocks = wl.micro_batches()
        prologue = list(range(wl.prologue))
        epilogue = list(range(len(wl.layers) - wl.epilogue, len(wl.layers)))
        forwards = [0] * wl.pp
        arrived = {}                                 # (kind, stage, j) -> per rank: the data arrived
        for s, step, j, last in pipeline_order(kind, wl.pp, wl.ga):
            members = stages[s]
            forward = step == "F"
            need = (step, s - 1 if forward else s + 1, j)
            carry = (arrived.pop(need),) if need in arrived else ()
            if forward:
                forwards[s] += 1
                carry = self.forward((prologue if forwards[s] == 1 else []) + blocks[j], members, it, carry)
                if forwards[s] == wl.ga and epilogue:
                    carry = self.backward(epilogue[::-1], members, it, self.forward(epilogue, members, it, carry))
            else:
                carry = self.backward(blocks[j][::-1] + (prologue[::-1] if last else []), members, it, carry)
            if carry:                                # the blocking communication, then the transfer
                self.compute(members, 0, it, carry)
            peer = s + 1 if forward else s - 1
            if 0 <= peer < wl.pp:
                arrived[(step, s, j)] = self.send(members, stages[peer], it)
