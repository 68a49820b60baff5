"""Collective operations as dependency graphs of flows (all-reduce, all-to-all, ...).

A collective on ranks r_0..r_{p-1} (GPUs of a `rocesim.network.platform.Platform`; on a plain
topology, hosts) becomes flows with data dependencies: a
rank forwards data only after the data it depends on has arrived.  Every message is
split into `chunks` pieces that pipeline through the steps; the chunks of one
transfer go in order (chunk c waits for chunk c-1 of the same transfer).  Each rank
gets a zero-length start node (the collective's trigger, a root or the child of
whatever must come first) and a done node (after every flow it receives that nothing
else waits for), so collectives chain into training iterations.

`size` follows nccl-tests: the larger per-rank buffer (all-reduce: the buffer;
all-gather: the gathered output; reduce-scatter: the input; all-to-all: the send buffer,
of which each rank sends size/p to every rank including itself, so (p-1)/p of it leaves
the rank; broadcast/reduce: the buffer).

On a multi-GPU platform a transfer between GPUs of one server crosses the scale-up
domain as a fluid transfer (compute-like nodes, see `rocesim.network.platform`), one between
servers is a flow between the GPUs' NICs; with `pxn` (the default, as NCCL's PXN: see
`nccl.PXN_DEFAULT`; and always on a rail-only fabric) a transfer to another rail is
forwarded through the GPU on the destination's rail (`rocesim.training.transfers`).

The algorithms, each with its time in an idle network, are the files of
`rocesim.training.algorithms`, found by name in its registry: ring and ring_bidir,
halving_doubling, double_binary_tree, hierarchical and hierarchical_tree, dimensional and
themis, NCCL's nccl_ring, nccl_tree, nccl_nvls and nccl_nvls_tree, auto (NCCL's tuning
model), direct and pairwise all-to-all, and the rooted broadcast and reduce (ring, direct).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from rocesim.config import DEFAULT_FLOW_PRIORITY
from rocesim.errors import ScenarioError
from rocesim.network.platform import Platform
from rocesim.training.algorithms import Algorithm, Plan, lookup
from rocesim.training.algorithms.registry import smallest_block
from rocesim.training.connections import communicator, communicators, rebased
from rocesim.training.graph import COLUMNS, DTYPES, EmptyFlow, Graph
from rocesim.training.nccl import PXN_DEFAULT, NcclConfig
from rocesim.training.transfers import Transfers, hosts_platform
from rocesim.units import MAX_TIME_PS, format_rate, format_size, format_time


def flow_count_estimate(op, algorithm, ranks, chunks, size=0, nccl=None) -> int:
    """About how many flows and compute steps a collective adds, an upper end (for the
    memory check): the algorithm's `estimate` on max(ranks, 2) ranks (textbook algorithms:
    chunks x ranks x (steps + 4); NCCL's: two nodes per slice)."""
    return lookup(op, algorithm).estimate(op, max(int(ranks), 2), chunks, size, NcclConfig.resolve(nccl))


@dataclass
class CollectiveRecord:
    """What a collective became in the graph (graph-local ids until added to a Simulation)."""

    id: int
    op: str
    algorithm: str
    ranks: np.ndarray          # the GPU ranks (on a plain topology: hosts)
    size: int
    start_nodes: np.ndarray    # per rank
    done_nodes: np.ndarray     # per rank
    flows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    job: str = ""              # the job (workload) it belongs to, if any

    def shifted(self, offset: int, ids: int = 0) -> "CollectiveRecord":
        """The record once its graph's node ids start at `offset` and collective ids at `ids`."""
        return CollectiveRecord(self.id + ids, self.op, self.algorithm, self.ranks, self.size,
                                self.start_nodes + offset, self.done_nodes + offset, self.flows + offset,
                                self.job)


@dataclass
class CollectiveBatch:
    """One collective on several groups at once, as `CollectiveRecord`s row by row: row k is
    collective `ids[k]` on `ranks[k]`, with its start, done and other nodes in row k of
    `start_nodes`, `done_nodes` and `flows` (the records of a large job, without a Python
    object per collective)."""

    ids: np.ndarray            # (m,)
    op: str
    algorithm: str
    ranks: np.ndarray          # (m, p)
    size: int
    start_nodes: np.ndarray    # (m, a)
    done_nodes: np.ndarray     # (m, b)
    flows: np.ndarray          # (m, f), each row sorted
    job: str = ""

    def __len__(self) -> int:
        return self.ids.size

    def record(self, k: int) -> CollectiveRecord:
        """Row k as a record."""
        return CollectiveRecord(int(self.ids[k]), self.op, self.algorithm, self.ranks[k], self.size,
                                self.start_nodes[k], self.done_nodes[k], self.flows[k], self.job)

    def rows(self, name: str) -> np.ndarray:
        """The (m, .) array of `start_nodes`, `done_nodes` or `flows`."""
        return getattr(self, name)

    def shifted(self, offset: int, ids: int = 0) -> "CollectiveBatch":
        """The batch once its graph's node ids start at `offset` and collective ids at `ids`."""
        return CollectiveBatch(self.ids + ids, self.op, self.algorithm, self.ranks, self.size,
                               self.start_nodes + offset, self.done_nodes + offset, self.flows + offset, self.job)


class Collectives:
    """A sequence of `CollectiveRecord`s kept in batches: records (a batch of one) and
    `CollectiveBatch`es.  Indexing and iterating give records, `batches()` what it holds."""

    def __init__(self, batches=()):
        self._batches: list = []
        self._ends: list[int] = []
        self.extend(batches.batches() if isinstance(batches, Collectives) else batches)

    def append(self, batch) -> None:
        """Add a record or a batch."""
        self._batches.append(batch)
        self._ends.append((self._ends[-1] if self._ends else 0) + (len(batch) if isinstance(batch, CollectiveBatch)
                                                                    else 1))

    def extend(self, batches) -> None:
        """Add records and batches, in order."""
        for batch in batches:
            self.append(batch)

    def batches(self) -> list:
        """The records and batches held, in order."""
        return self._batches

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        n = len(self)
        if not -n <= k < n:
            raise IndexError("collective index out of range")
        k %= n
        i = bisect.bisect_right(self._ends, k)
        batch = self._batches[i]
        return batch.record(k - (self._ends[i - 1] if i else 0)) if isinstance(batch, CollectiveBatch) else batch

    def __iter__(self):
        for batch in self._batches:
            if isinstance(batch, CollectiveBatch):
                yield from (batch.record(k) for k in range(len(batch)))
            else:
                yield batch

    def shifted(self, offset: int, ids: int = 0) -> "Collectives":
        """Every batch once the graph's node ids start at `offset` and collective ids at `ids`."""
        return Collectives(b.shifted(offset, ids) for b in self._batches)


def node_rows(batches, name: str) -> np.ndarray:
    """`start_nodes` or `done_nodes` of records and batches, one row per collective."""
    return np.concatenate([b.rows(name) if isinstance(b, CollectiveBatch) else getattr(b, name)[None, :]
                           for b in batches])



def _communicator(nccl: NcclConfig, job: str, algorithm: str, ranks) -> int | None:
    """The id of the communicator whose connections a collective of `algorithm` on `ranks`
    rides (`nccl.connections: persistent`), or None: each flow its own queue pair."""
    return communicator(job, algorithm, ranks) if nccl.connections == "persistent" else None


# point-to-point transfers of a job ride connections per pair of ranks (peers: the ranks)
P2P = "sendrecv"


def point_to_point(g, platform, src, dst, sizes, *, prio=DEFAULT_FLOW_PRIORITY, iteration=-1, tag=0,
                   start=0, pxn=PXN_DEFAULT, nccl=None, job="") -> tuple[np.ndarray, np.ndarray]:
    """Transfers of `sizes[k]` bytes from rank `src[k]` to rank `dst[k]` of `platform` (None:
    ranks are hosts), not part of a collective: a flow between their NICs, or inside a
    server a fluid scale-up transfer (its sender's port held in the order given, then the
    latency).  With `pxn` (and always on a rail-only fabric) a transfer to another rail of
    another server first crosses the scale-up domain to the GPU on the destination's rail,
    as NCCL's send/recv does (NCCL_P2P_PXN_LEVEL 2).  Returns the ids of (the node each
    starts with, the node it arrives with); for a flow both are the flow.  Roots start at
    `start`.  With `nccl.connections: persistent` the flows between two ranks ride one
    connection of `job`'s."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    ranks = np.concatenate([src, dst])
    t = Transfers(g, ranks, 1, prio, -1, iteration, tag, platform, pxn, start=start,
                  comm=_communicator(NcclConfig.resolve(nccl), job, P2P, ()), peers=ranks)
    first, last = t.route(src, dst, np.asarray(sizes, np.int64)[None, :])
    return first[0], last[0]


def add_sendrecv(g, src, dst, size, *, platform=None, prio=DEFAULT_FLOW_PRIORITY, cid=0, iteration=-1, tag=0,
                 start=0, chunks=1, pxn=PXN_DEFAULT, job="", nccl=None) -> CollectiveRecord:
    """Point-to-point transfers src[k] -> dst[k] (ranks) of `size` bytes each, at once (a
    pipeline-parallel stage boundary); a record like a collective's, with op `sendrecv`
    and one start and done node per rank of `src` then `dst` (connections as
    `point_to_point`'s)."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    ranks = np.concatenate([src, dst])
    if size <= 0:
        raise ScenarioError("size", "must be positive")
    t = Transfers(g, ranks, max(1, min(chunks, size)), prio, cid, iteration, tag, platform, pxn,
                  comm=_communicator(NcclConfig.resolve(nccl), job, P2P, ()), peers=ranks)
    hosts = t.platform.host_of(ranks)
    start_nodes = g.compute(hosts, 0, collective=cid, iteration=iteration, tag=tag, start=start)
    k = src.size
    t.send(np.arange(k), np.arange(k, 2 * k), size)
    done_nodes = g.compute(hosts, 0, collective=cid, iteration=iteration, tag=tag)
    flows = t.connect(start_nodes, done_nodes)
    return CollectiveRecord(cid, "sendrecv", "direct", ranks, int(size), start_nodes, done_nodes, flows, job)


# the largest count (bytes, cycles, ...) a foreign file's number may hold before it is checked
# against the network and the time horizon: far from int64 in whatever is made of it
MAX_COUNT = 2**62


def size_limit(platform: Platform) -> tuple[int, int]:
    """(the most bytes a collective on `platform` may move, the fastest link's rate it
    comes from): every collective sends at least half its size through one rank's link
    (an all-reduce's ring 2 (p-1)/p of it, an all-to-all, all-gather or reduce-scatter
    (p-1)/p, a broadcast or send all of it), so more than twice what the fastest link
    (scale-up included) carries within the time horizon cannot finish; at most 1e18 B,
    far from int64 in any byte count made of it."""
    topo = platform.topology
    rates = [int(topo.rate_ab.max()), int(topo.rate_ba.max())] if topo.n_links else []
    if platform.scale_up is not None:
        rates.append(platform.scale_up.rate_bps)
    fastest = max(rates, default=0)
    return (min(2 * MAX_TIME_PS * fastest // (8 * 10**12), 10**18) if fastest else 10**18), fastest


def check_size(size: int, platform: Platform, key: str = "size", *, send: bool = False) -> None:
    """Refuse a collective of `size` bytes that cannot finish within the time horizon
    (`size_limit`), keyed `key` (a file:line for a foreign file's); with `send`, a
    point-to-point transfer, all of which crosses one link (half the bound)."""
    most, fastest = size_limit(platform)
    most, what, share = (most // 2, "a transfer", "all") if send else (most, "a collective", "at least half")
    if size > most:
        raise ScenarioError(key, f"{what} of {format_size(int(size))} cannot finish within the simulator's time "
                                 f"horizon ({format_time(MAX_TIME_PS)}): it sends {share} of it through one "
                                 f"rank's link, at most {format_rate(fastest)} here; at most {format_size(most)}")


def _plan(op, algorithm, ranks, size, chunks, group_size, platform, nccl, options=None
          ) -> tuple[np.ndarray, Platform, Algorithm, Plan]:
    """A collective's inputs checked and its plan: (ranks, platform (of hosts when None), the
    algorithm (`auto` resolved), the plan it is built by)."""
    alg = lookup(op, algorithm)
    ranks = np.asarray(ranks, np.int64)
    p = ranks.size
    if p < 2:
        raise ScenarioError("ranks", f"a collective needs at least two ranks, got {p}")
    unique, counts = np.unique(ranks, return_counts=True)
    if unique.size != p:
        raise ScenarioError("ranks", f"rank {int(unique[counts > 1][0])} is given {int(counts[counts > 1][0])} times; "
                                     "a collective's ranks are distinct")
    if size <= 0:
        raise ScenarioError("size", "must be positive")
    platform = hosts_platform(ranks) if platform is None else platform
    check_size(size, platform)
    if alg.pick is not None:                                # as NCCL's tuning model picks
        alg = lookup(op, alg.pick(op, platform, ranks, size))
    if not 1 <= chunks:
        raise ScenarioError("chunks", "must be at least 1")
    if op == "alltoall" and size < p:
        raise ScenarioError("size", f"an all-to-all of {size} B on {p} ranks sends nothing (size/p bytes per pair)")
    chunks = max(1, min(chunks, smallest_block(op, size, p)))            # no empty chunk
    plan = Plan(op, int(size), chunks, chunks, group_size=group_size, nccl=NcclConfig.resolve(nccl),
                options=MappingProxyType(dict(options or {})))
    return ranks, platform, alg, (plan if alg.plan is None else alg.plan(plan, platform, ranks))


def _in_server_ps(t: Transfers, alg: Algorithm, plan: Plan) -> int | None:
    """The duration of a collective whose ranks all sit in one server, from its algorithm's
    closed form in the fluid scale-up model (one piece per transfer), or None when there is
    none.  With one chunk and every rank starting together it is exactly what the
    step-by-step transfers give (tests/network/test_platform.py), in a handful of nodes
    instead of hundreds."""
    pf = t.platform
    if (alg.closed_form is None or pf.scale_up is None or pf.gpus_per_server == 1 or t.pieces != 1
            or np.unique(pf.server[t.ranks]).size != 1):
        return None
    return alg.closed_form(t, plan)


def closed_form(op, algorithm, ranks, size, *, platform, chunks=1, nccl=None) -> tuple[str, int] | None:
    """(algorithm, duration in ps) when `append_collective` builds the collective on `ranks`
    of `platform` in its closed form (inside one server, `_in_server_ps`), else None."""
    ranks, platform, alg, plan = _plan(op, algorithm, ranks, size, chunks, None, platform, nccl)
    t = Transfers(Graph(), ranks, plan.pieces, DEFAULT_FLOW_PRIORITY, 0, -1, 0, platform, False, plan.lanes)
    ps = _in_server_ps(t, alg, plan)
    return None if ps is None else (alg.name, ps)


def closed_form_rows(op, algorithm, rows, size, *, platform, chunks=1, nccl=None) -> tuple[str, int] | None:
    """The closed form (`closed_form`) of `op` on every row of `rows` (ranks, one group per
    row), when each group sits in one server and every placement in a server gives the same
    one (it depends on the local GPUs only); else None."""
    rows = np.atleast_2d(np.asarray(rows, np.int64))
    if (platform.server[rows] != platform.server[rows[:, :1]]).any():
        return None
    first: dict = {}                                         # a row of each placement
    for k, local in enumerate(map(tuple, platform.local[rows].tolist())):
        first.setdefault(local, k)
    forms = {closed_form(op, algorithm, rows[k], size, platform=platform, chunks=chunks, nccl=nccl)
             for k in first.values()}
    return forms.pop() if len(forms) == 1 else None


def append_collective(g, op, algorithm, ranks, size, *, chunks=1, prio=DEFAULT_FLOW_PRIORITY, cid=0,
                   iteration=-1, tag=0, start=0, group_size=None, platform=None, pxn=PXN_DEFAULT,
                   job="", closed_form=True, nccl=None, options=None) -> CollectiveRecord:
    """Append a collective to Graph `g`, built by its algorithm (`rocesim.training.algorithms`);
    returns its record (graph-local ids).

    `ranks` are GPU ranks of `platform` (a `rocesim.network.platform.Platform`; None: ranks are
    hosts).  `pxn` forwards transfers to other rails through the scale-up domain first
    (NCCL's PXN, on by default as in NCCL).
    A collective inside one server takes its fluid closed form when it has one
    (`closed_form`, see `_in_server_ps`): it starts when every rank has started.
    `nccl` (an `NcclConfig` or a mapping of `rocesim.training.nccl.NCCL` settings) shapes
    the nccl_* algorithms; `options` (a mapping) are the algorithm's own settings (`Plan.options`);
    with `connections: persistent` the flows ride the connections of the communicator of
    `ranks` in `job` for the algorithm (`rocesim.training.connections`).
    The start nodes are roots starting at `start` unless the caller makes them depend on
    other nodes (`g.depend(record.start_nodes, ...)`).
    """
    ranks, platform, alg, plan = _plan(op, algorithm, ranks, size, chunks, group_size, platform, nccl, options)
    p = ranks.size
    t = Transfers(g, ranks, plan.pieces, prio, cid, iteration, tag, platform, pxn, plan.lanes,
                  comm=_communicator(plan.nccl, job, alg.name, ranks))
    hosts = platform.host_of(ranks)
    start_nodes = g.compute(hosts, 0, collective=cid, iteration=iteration, tag=tag, start=start)
    fluid = _in_server_ps(t, alg, plan) if closed_form else None
    if fluid is not None:
        everyone = t.join([], 0)                    # when every rank has started (one piece)
        g.depend(np.repeat(everyone, p), start_nodes)
        busy = g.compute(hosts, fluid, **t.node_kw)
        g.depend(busy, np.repeat(everyone, p))
        t.add_nodes(busy)
        t.mark_first(busy, np.arange(p))            # so that connect() makes done wait for them
        t.mark_final(busy, np.arange(p))
    else:
        try:
            alg.build(t, plan)
        except EmptyFlow:
            raise ScenarioError("size", f"{op} of {size} B on {p} ranks by {alg.name} cuts it into more blocks "
                                        "than it has bytes (a transfer of 0 bytes): give it more bytes") from None
    done_nodes = g.compute(hosts, 0, collective=cid, iteration=iteration, tag=tag)
    flows = t.connect(start_nodes, done_nodes)
    return CollectiveRecord(cid, op, alg.name, ranks, int(size), start_nodes, done_nodes, flows, job)


class Templates:
    """Collectives built once and copied (`append_collectives`), for one platform.

    A collective's graph depends on its ranks only through their servers' order, their
    local GPU indices (hence their rails) and their NICs' rates and delays (`Transfers`, the
    algorithms; ranks are numbered server-major, so the ranks' order follows). Two
    groups with the same local indices position by position, whose servers come in the
    same order, make the same graph up to the hosts, when every NIC has the same link:
    it is built once, on the first such group, and copied with its hosts moved server by
    server.  The algorithms that are not `copyable` (the dimensional and themis all-reduces,
    which also look at pods) and plain topologies of differing hosts are built group by group."""

    def __init__(self, platform: Platform):
        self.platform = platform
        topo = platform.topology
        links = {(topo.host_rate(h), topo.host_delay(h)) for h in range(topo.n_hosts)}
        self.uniform = len(links) <= 1
        self.built: dict = {}                    # (options, shape) -> _Template
        self.layouts: dict = {}                  # (options, rows) -> _Layout

    def signatures(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per row of ranks: (its key: local indices, then each position's server as its rank
        among the row's servers; the row's servers in order; where each new one starts in that
        sorted row)."""
        pf = self.platform
        server = pf.server[rows]
        order = np.argsort(server, axis=1, kind="stable")
        ordered = np.take_along_axis(server, order, axis=1)
        new = np.ones(ordered.shape, bool)
        new[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
        dense = np.empty_like(ordered)
        np.put_along_axis(dense, order, np.cumsum(new, axis=1) - 1, axis=1)
        return np.concatenate([pf.local[rows], dense], axis=1), ordered, new


@dataclass
class _Template:
    """One collective's nodes and edges (int32) with ids from 0 and hosts as (server index in
    the group's sorted servers, NIC of the server); the record's node ids.  `columns` leaves
    src and dst out (the hosts); its queue pairs are those of communicator `comm`."""

    columns: dict
    src_at: np.ndarray
    dst_at: np.ndarray
    nic_src: np.ndarray
    nic_dst: np.ndarray
    children: np.ndarray
    parents: np.ndarray
    record: CollectiveRecord
    comm: int


def _template(templates, op, algorithm, ranks, size, ordered, new, **options) -> _Template:
    """Build the collective on `ranks` into a graph of its own and describe it as a template."""
    tg = Graph()
    rec = append_collective(tg, op, algorithm, ranks, size, cid=0, **options)
    servers = ordered[new]                                   # the group's servers, sorted
    N = templates.platform.nics_per_server
    at = {}
    for side in ("src", "dst"):
        host = tg.column(side)
        server = host // N
        i = np.searchsorted(servers, server)
        if (i >= servers.size).any() or (servers[np.minimum(i, servers.size - 1)] != server).any():
            raise AssertionError("a collective's node outside its ranks' servers")   # (cannot happen)
        at[side] = (i.astype(np.int32), host % N)
    cols = {name: tg.column(name) for name in COLUMNS if name not in at}
    children, parents = tg.edges(np.int32)
    return _Template(cols, at["src"][0], at["dst"][0], at["src"][1], at["dst"][1], children, parents, rec,
                     communicator(options.get("job", ""), rec.algorithm, ranks))


def append_collectives(g, op, algorithm, rows, size, *, cids, templates: Templates | None = None, **options
                       ) -> list:
    """`append_collective(g, op, algorithm, row, size, cid=cids[k], **options)` for every row
    `k` of `rows` (ranks, one group per row), in row order: the same nodes, ids and records
    (as records and `CollectiveBatch`es, in row order);
    the same edges, each node's children in the same order (the edges of all the groups
    come first, in row order).  With `templates` (for the graph's platform) a group whose
    collective has the same shape as an earlier one's (`Templates`) is copied from it
    instead of built, and a call like an earlier one (the same rows and options) repeats it."""
    rows = np.atleast_2d(np.asarray(rows, np.int64))
    cids = np.asarray(cids, np.int64)
    if (templates is None or not templates.uniform or options.get("platform") is not templates.platform
            or not lookup(op, algorithm).copyable):
        return [append_collective(g, op, algorithm, row, size, cid=int(c), **options) for row, c in zip(rows, cids)]
    fixed = (op, algorithm, int(size), NcclConfig.resolve(options.get("nccl")),
             tuple(sorted((k, v) for k, v in options.items() if k not in ("nccl", "platform"))))
    key = (fixed, rows.shape, rows.tobytes())
    if key not in templates.layouts:
        templates.layouts[key] = _layout(templates, fixed, op, algorithm, rows, size, options)
    lay = templates.layouts[key]
    n0 = g.n
    # the layout's columns themselves (a graph never changes its arrays): no copy of them
    cols = dict(lay.columns, collective=np.where(lay.cid_row >= 0, cids.astype(np.int32)[lay.cid_row], np.int32(-1)))
    records = [CollectiveBatch(cids[which], r.op, r.algorithm, rows[which], r.size, r.start_nodes + n0,
                               r.done_nodes + n0, r.flows + n0, r.job) for which, r in lay.records]
    g.extend(cols, lay.children + np.int32(n0), lay.parents + np.int32(n0))       # (int32: graph ids)
    return records


@dataclass
class _Layout:
    """What `append_collectives` appends for some rows, node ids from 0: the columns (the
    collective's id left out: each node's row in `cid_row`, -1 for none), the edges (int32),
    and the records as (rows, a batch with row-relative ids)."""

    columns: dict
    cid_row: np.ndarray
    children: np.ndarray
    parents: np.ndarray
    records: list


def _layout(templates, fixed, op, algorithm, rows, size, options) -> _Layout:
    """The `_Layout` of `rows`: each row's collective copied from the template of its shape."""
    keys, ordered, new = templates.signatures(rows)
    if (keys == keys[:1]).all():                          # (the usual case: one shape)
        kind, first = np.zeros(len(keys), np.int64), np.zeros(1, np.int64)
    else:
        index: dict = {}
        kind = np.array([index.setdefault(k.tobytes(), len(index)) for k in keys], np.int64)
        first = np.unique(kind, return_index=True)[1]
    tmpl = []
    for f in first:
        key = (fixed, keys[f].tobytes())
        if key not in templates.built:
            templates.built[key] = _template(templates, op, algorithm, rows[f], size, ordered[f], new[f], **options)
        tmpl.append(templates.built[key])
    sizes = np.array([t.src_at.size for t in tmpl], np.int64)[kind]
    base = np.concatenate([[0], np.cumsum(sizes)[:-1]])     # where each row's nodes start
    N = templates.platform.nics_per_server
    cols = {name: np.empty(int(sizes.sum()), DTYPES[name]) for name in COLUMNS if name != "collective"}
    cid_row = np.empty(int(sizes.sum()), np.int32)          # (the column itself is filled per call)
    n_edges = np.array([t.children.size for t in tmpl], np.int64)[kind]
    edge_base = np.concatenate([[0], np.cumsum(n_edges)[:-1]]).astype(np.int32)   # each row's edges, in row order
    children, parents = np.empty(int(n_edges.sum()), np.int32), np.empty(int(n_edges.sum()), np.int32)
    for u, t in enumerate(tmpl):                             # (int32 positions: no int64 (rows, nodes) arrays)
        which = np.flatnonzero(kind == u)
        servers = ordered[which][:, new[first[u]]]           # per row: its servers, sorted
        row_base = base[which].astype(np.int32)[:, None]
        at = row_base + np.arange(t.src_at.size, dtype=np.int32)
        cols["src"][at] = servers[:, t.src_at] * N + t.nic_src
        cols["dst"][at] = servers[:, t.dst_at] * N + t.nic_dst
        cid_row[at] = np.where(t.columns["collective"] >= 0, which[:, None].astype(np.int32), np.int32(-1))
        for name, v in t.columns.items():
            if name != "collective":
                cols[name][at] = v
        if (t.columns["qp"] >= 0).any():                     # each row's own communicator's connections
            comms = communicators(options.get("job", ""), t.record.algorithm, rows[which])
            cols["qp"][at] = rebased(t.columns["qp"][None, :], t.comm, comms[:, None])
        at = edge_base[which][:, None] + np.arange(t.children.size, dtype=np.int32)
        children[at] = t.children + row_base
        parents[at] = t.parents + row_base
    # the records: one batch when every group's record has the same shape (the usual case)
    shapes = {(t.record.algorithm, t.record.start_nodes.size, t.record.done_nodes.size, t.record.flows.size)
              for t in tmpl}
    if len(shapes) == 1:
        r = tmpl[0].record
        rec_rows = {name: np.empty((rows.shape[0], getattr(r, name).size), np.int64)
                    for name in ("start_nodes", "done_nodes", "flows")}
        for u, t in enumerate(tmpl):
            which = np.flatnonzero(kind == u)
            for name, out in rec_rows.items():
                out[which] = getattr(t.record, name)[None, :] + base[which][:, None]
        records = [(np.arange(rows.shape[0]), CollectiveBatch(None, r.op, r.algorithm, None, r.size, **rec_rows,
                                                              job=r.job))]
    else:
        records = []
        for k in range(rows.shape[0]):
            r, b = tmpl[kind[k]].record, base[k]
            records.append((np.arange(k, k + 1), CollectiveBatch(None, r.op, r.algorithm, None, r.size,
                                                                 r.start_nodes[None, :] + b,
                                                                 r.done_nodes[None, :] + b, r.flows[None, :] + b,
                                                                 r.job)))
    return _Layout(cols, cid_row, children, parents, records)
