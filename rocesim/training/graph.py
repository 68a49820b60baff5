"""A dependency graph of flows and compute steps, built as arrays before it joins a Simulation.

Collective algorithms and training workloads produce thousands to millions of nodes;
`Graph` collects them a numpy block at a time (never a Python object per flow) and
`Simulation.add_graph` appends the whole graph in one call.  Node ids are local to the
graph (0..n-1) until it is added.
"""
from __future__ import annotations

import numpy as np

from dataclasses import dataclass, field

from rocesim.config import DEFAULT_FLOW_PRIORITY, OWN_QP
from rocesim.errors import ScenarioError


# compact columns: a training run can hold millions of nodes
# (`size`: a data flow's bytes, 0 for a compute step; `duration`: a compute step's ps, 0 for a flow;
# `qp`: the label of the queue pair a flow rides, -1 its own: `rocesim.training.connections`)
DTYPES = dict(src=np.int32, dst=np.int32, size=np.int64, duration=np.int64, start=np.int64, prio=np.int8,
              compute=np.int8, delay=np.int64, tag=np.int32, collective=np.int32, iteration=np.int32, qp=np.int64)
COLUMNS = tuple(DTYPES)          # a graph's node columns
# pieces appended before the newest are merged into one array: a small numpy array costs
# ~100 bytes of its own, more than the 62 bytes of a node's columns (a 1024-GPU Llama 3 70B
# iteration appends millions of pieces)
_MERGE = 1024


class EmptyFlow(ScenarioError):
    """A data flow of no bytes added to a graph (a collective cut into more blocks than it
    has bytes, say): `Graph.flows` refuses it, its caller says why it was empty."""

    def __init__(self, key: str = "size", reason: str = "a data flow needs at least one byte, got 0"):
        super().__init__(key, reason)


class Graph:
    """Nodes (data flows and compute steps) and edges (child waits for parent)."""

    def __init__(self):
        self._cols = {k: [] for k in COLUMNS}
        self._edges: list[tuple[np.ndarray, np.ndarray]] = []
        self._merged = [0, 0]          # pieces of the columns, of the edges, already merged
        self.n = 0

    def _add(self, src, dst, size, duration, prio, compute, delay, tag, collective, iteration, start=0,
             qp=OWN_QP) -> np.ndarray:
        src = np.atleast_1d(np.asarray(src, np.int64))
        k = src.size
        cols = {}
        for name, v in (("src", src), ("dst", dst), ("size", size), ("duration", duration), ("start", start),
                        ("prio", prio),
                        ("compute", compute), ("delay", delay), ("tag", tag), ("collective", collective),
                        ("iteration", iteration), ("qp", qp)):
            if isinstance(v, (int, np.integer)):              # (most columns of most calls)
                cols[name] = np.full(k, v, DTYPES[name])
                continue
            v = np.asarray(v, DTYPES[name])
            cols[name] = np.full(k, v) if v.ndim == 0 else np.array(np.broadcast_to(v, (k,)))
        return self._append_columns(cols, k)

    def _append_columns(self, cols: dict, k: int) -> np.ndarray:
        """Append `k` nodes given as whole columns of the graph's dtypes; returns their ids."""
        ids = np.arange(self.n, self.n + k, dtype=np.int64)
        for name, v in cols.items():
            self._cols[name].append(v)
        self.n += k
        first = self._merged[0]
        if len(self._cols["src"]) - first >= _MERGE:
            for parts in self._cols.values():
                parts[first:] = [np.concatenate(parts[first:])]
            self._merged[0] += 1
        return ids

    def extend(self, columns: dict, children=(), parents=()) -> int:
        """Append nodes given as whole columns (every column of the graph, arrays of one
        length) and edges between graph ids (children[i] waits for parents[i]; int32 arrays of
        one length are kept as they are); returns the id of the first new node.  Columns of the
        graph's dtypes are kept, not copied: the graph never changes its arrays in place."""
        first = self.n
        k = len(columns["src"])
        self._append_columns({name: np.asarray(columns[name], DTYPES[name]) for name in self._cols}, k)
        c, p = np.asarray(children), np.asarray(parents)
        if c.dtype == p.dtype == np.int32 and c.ndim == 1 and c.shape == p.shape:
            self._add_edges(c, p)
        else:
            self.depend(c, p)
        return first

    @property
    def n_edges(self) -> int:
        """How many edges the graph holds."""
        return sum(c.size for c, _ in self._edges)

    def repeat(self, first: int, first_edge: int, times: int) -> None:
        """Append `times` copies of a pattern: the nodes from id `first` on and the edges
        from the `first_edge`-th on (a ring collective's loops, each the same slices).  Copy
        j's edges have both ends moved by (j + 1) x the pattern's node count, ends before
        `first` included: the pattern's waits on the nodes before it move as it does."""
        k = self.n - first
        if times <= 0 or k <= 0:
            return
        cols = {name: np.tile(_tail(parts, self.n - first), times) for name, parts in self._cols.items()}
        children = _tail([c for c, _ in self._edges], self.n_edges - first_edge).astype(np.int64)
        parents = _tail([p for _, p in self._edges], self.n_edges - first_edge).astype(np.int64)
        shift = np.arange(1, times + 1, dtype=np.int64)[:, None] * k
        self._append_columns(cols, k * times)
        self._add_edges((children + shift).ravel().astype(np.int32), (parents + shift).ravel().astype(np.int32))

    def flows(self, src, dst, size, *, prio=DEFAULT_FLOW_PRIORITY, delay=0, tag=0, collective=-1,
              iteration=-1, start=0, qp=OWN_QP) -> np.ndarray:
        """Add data flows (arrays or scalars, broadcast); returns their ids.

        `start` (ps) applies to nodes without parents; the others start `delay` after
        their last parent.  `qp` labels the queue pair each rides (flows of one (src, dst)
        with the same label ride one; `OWN_QP`: its own; `rocesim.training.connections`).  A
        flow of no bytes is refused (`EmptyFlow`)."""
        if np.size(size) and np.min(size) <= 0:
            raise EmptyFlow()
        return self._add(src, dst, size, 0, prio, 0, delay, tag, collective, iteration, start, qp)

    def compute(self, host, duration_ps, *, delay=0, tag=0, collective=-1, iteration=-1, start=0) -> np.ndarray:
        """Add compute steps on hosts (duration 0 makes a join point); returns their ids."""
        host = np.atleast_1d(np.asarray(host, np.int64))
        return self._add(host, host, 0, duration_ps, 0, 1, delay, tag, collective, iteration, start)

    def compute_on_streams(self, hosts, rows, last, duration_ps, *, after=(), **kw) -> np.ndarray:
        """A compute step on each stream (a row of `rows`: ranks that run as one), on the host
        of its first rank, after what `last` (per rank) and each of `after` hold for its
        ranks; `last` then holds the new steps.  Returns their ids; `kw` as `compute`."""
        ids = self.compute(hosts[rows[:, 0]], duration_ps, **kw)
        for prev in (last, *after):
            self.depend_rows(ids, prev[rows])
        last[rows] = ids[:, None]
        return ids

    def depend(self, children, parents):
        """children[i] waits for parents[i] (arrays of ids, broadcast)."""
        c, p = np.broadcast_arrays(np.asarray(children, np.int64), np.asarray(parents, np.int64))
        self._add_edges(c.ravel().astype(np.int32), p.ravel().astype(np.int32))

    def _add_edges(self, c: np.ndarray, p: np.ndarray) -> None:
        """Keep edges given as int32 arrays of one length (a graph's ids are those of the
        core's flows)."""
        if c.size:
            self._edges.append((c, p))
            first = self._merged[1]
            if len(self._edges) - first >= _MERGE:
                tail = self._edges[first:]
                self._edges[first:] = [(np.concatenate([c for c, _ in tail]), np.concatenate([p for _, p in tail]))]
                self._merged[1] += 1

    def depend_rows(self, children, parents):
        """children[i] waits for each distinct node of parents[i] (an array (len(children), k)
        of ids; -1: none)."""
        if parents.shape[1] > 1 and (parents == parents[:, :1]).all():     # (one stream of k ranks)
            parents = parents[:, :1]
        elif parents.shape[1] > 1:
            parents = np.sort(parents, axis=1)
            parents[:, 1:][parents[:, 1:] == parents[:, :-1]] = -1
        ok = parents >= 0
        self.depend(np.broadcast_to(np.asarray(children)[:, None], parents.shape)[ok], parents[ok])

    def offset_ids(self, iteration: int, collective: int) -> None:
        """Add `iteration` and `collective` to the nodes' non-negative iteration and
        collective ids (local to the graph until it joins a Simulation)."""
        for name, offset in (("iteration", iteration), ("collective", collective)):
            parts = self._cols[name]   # (new arrays: a part may be shared, see `extend`)
            parts[:] = [np.where(chunk >= 0, chunk + chunk.dtype.type(offset), chunk) for chunk in parts]

    def column(self, name) -> np.ndarray:
        parts = self._cols[name]
        return np.concatenate(parts) if parts else np.zeros(0, DTYPES[name])

    def edges(self, dtype=np.int64) -> tuple[np.ndarray, np.ndarray]:
        """(children, parents): children[i] waits for parents[i]."""
        if not self._edges:
            return np.zeros(0, dtype), np.zeros(0, dtype)
        return (np.concatenate([c for c, _ in self._edges]).astype(dtype, copy=False),
                np.concatenate([p for _, p in self._edges]).astype(dtype, copy=False))


def _tail(parts: list, k: int) -> np.ndarray:
    """The last `k` entries of the arrays `parts` laid end to end."""
    taken, size = [], 0
    for part in reversed(parts):
        if size >= k:
            break
        taken.append(part)
        size += part.size
    whole = np.concatenate(taken[::-1]) if taken else np.zeros(0, np.int64)
    return whole[whole.size - k:]


class Progress:
    """A workload generator's reports to its guard (`guard`: a `rocesim.memory.WorkloadGuard`,
    or None for none) about what it builds, `what`: `check(nodes)` once its first iteration
    is built (nodes: the whole run's, projected), and `advance` every step of `total` units
    (stage passes or layer passes) with the nodes so far, so that a graph too large is
    refused, and sized by `rocesim check`, from its first part."""

    def __init__(self, guard, what: str, total: int, steps: int = 100, hint: str = ""):
        self.guard, self.what, self.total, self.hint = guard, what, max(int(total), 1), hint
        self.step = max(1, self.total // steps)
        self.done = 0

    def check(self, nodes: int) -> None:
        if self.guard is not None:
            self.guard.check(self.what, nodes)

    def advance(self, nodes: int, units: int = 1) -> None:
        """`units` more built, `nodes` in all: reported every `total / steps` units and, before
        the first such report, at every power of two (so that the guard may size or refuse a
        long graph from a bounded prefix: `WorkloadGuard.PREFIX_NODES`)."""
        before = self.done
        self.done += units
        if self.guard is not None and self.done < self.total and (
                self.done // self.step != before // self.step
                or (self.done < self.step and self.done.bit_length() != before.bit_length())):
            self.guard.progress(self.what, nodes, self.done / self.total, self.hint)


# a layer workload's communication groups in words (`rocesim.training.workloads.model.GROUPS`)
GROUP_NAMES = {"dp": "data-parallel", "mp": "model-parallel (TP)", "ep": "expert-parallel",
               "dp_ep": "expert-data-parallel", "all": "whole-job"}


@dataclass(frozen=True)
class EmptyCollectives:
    """The collectives a workload declares that move nothing: `counts` of them by (op,
    group) among the `declared` communications of its layers (per layer and phase), those
    whose group holds one GPU.  SimAI (and ASTRA-sim) run a collective of one rank as no
    communication, and so does rocesim: none is built (AICB's DeepSpeed ZeRO-3 files
    declare `model_parallel_NPU_group: 1`, so their TP all-gathers are such)."""

    workload: str
    declared: int
    counts: dict                     # (op, group) -> communications declared on groups of one GPU

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def describe(self) -> str:
        """One line: how many, of what, and why."""
        what = ", ".join(f"{op} on {GROUP_NAMES.get(group, group)} groups x{n:,}"
                         for (op, group), n in sorted(self.counts.items()))
        return (f"workload {self.workload}: {self.total:,} of its {self.declared:,} declared collectives are "
                f"on groups of one GPU and move nothing, as in SimAI ({what})")


@dataclass
class TrainingGraph:
    """What a workload adds to a Simulation (`Simulation.add_workload`): its graph, its
    collectives (records with graph-local node ids and ids 0, 1, ...), how many iterations
    it runs (the graph's iteration ids 0..iterations-1), its job's name, and the collectives
    it declares that move nothing (`EmptyCollectives`, None when there are none)."""

    graph: Graph
    collectives: list
    iterations: int
    job: str = ""
    empty: EmptyCollectives | None = None


@dataclass
class TrainingInfo:
    """The ids (global, once added) of what a workload added: its iterations and collectives."""

    iterations: list[int] = field(default_factory=list)
    collectives: list = field(default_factory=list)
