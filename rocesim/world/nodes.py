"""The nodes of a simulation's dependency graph, as columns: network flows (bytes from one
host to another) and compute steps (a duration on one host), with the edges between them
(a child starts when its parents are done), each checked as it is added.

A flow's id is its row.  Columns are kept as the numpy chunks they were added in until the
core takes them (`core_arrays`), so that a million-node workload is never copied twice.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from rocesim import config
from rocesim.config import OWN_QP
from rocesim.errors import ScenarioError
from rocesim.memory import MemoryLimit, memory_estimate
from rocesim.network import routing
from rocesim.network.topology import Topology
from rocesim.settings import show
from rocesim.traffic.flowtable import DEFAULT_DPORT, FlowTable
from rocesim.units import MAX_TIME_PS, format_rate, format_size, format_time, parse_rate, parse_size, parse_time
from rocesim.world.connections import user_label
from rocesim.world.pfc import frame_bytes

#: every column, with its dtype and the value of rows that do not set it (`size`: a data
#: flow's bytes, 0 for a compute step; `duration`: a compute step's ps, 0 for a flow; `qp`:
#: the label of the queue pair a flow rides, -1 its own: `rocesim.world.connections`)
COLUMNS = dict(src=(np.int32, 0), dst=(np.int32, 0), size=(np.int64, 0), duration=(np.int64, 0),
               start=(np.int64, 0), prio=(np.int32, 0), compute=(np.int8, 0), delay=(np.int64, 0),
               tag=(np.int32, 0), dport=(np.int32, DEFAULT_DPORT), collective=(np.int32, -1),
               iteration=(np.int32, -1), rate_limit=(np.int64, 0), qp=(np.int64, OWN_QP))


class Nodes:
    """Flows and compute steps added so far, and their dependencies, on `topology` with
    its `ports`, for NICs set as `nic` (a resolved `config.NIC`); `memory` (the
    simulation's limit, None: none) refuses nodes that would not fit beside the topology."""

    def __init__(self, topology: Topology, ports: routing.Ports, nic: dict, memory: MemoryLimit | None = None):
        self.topology, self.ports, self.nic, self.memory = topology, ports, nic, memory
        self.chunks: list[dict] = []
        self.n = 0
        self.edges: list[tuple[np.ndarray, np.ndarray]] = []    # (child ids, parent ids)
        self.paths: dict[int, list[int]] = {}                     # flow id -> egress port per hop

    # --- adding ----------------------------------------------------------------------

    def add_flow(self, src, dst, size, start, *, prio, path, after, delay, tag, rate, connection=None) -> int:
        """One data flow (see `Simulation.add_flow`); returns its id."""
        key = f"flows[{self.n}]"
        qp = OWN_QP if connection is None else user_label(connection, f"{key}.connection")
        src, dst = self.host(src, f"{key}.src"), self.host(dst, f"{key}.dst")
        if src == dst:
            raise ScenarioError(f"{key}.dst", f"a flow needs two different hosts, got {src} -> {dst}")
        size = parse_size(size, f"{key}.size", bare_ok=True)
        if size <= 0:
            raise ScenarioError(f"{key}.size", "must be positive")
        if not (isinstance(prio, int) and 1 <= prio <= 7):
            raise ScenarioError(f"{key}.prio", f"data flows use priorities 1..7, got {prio!r}")
        limit = 0
        if rate is not None:
            limit = parse_rate(rate, f"{key}.rate", bare_ok=True)
            if limit <= 0:
                raise ScenarioError(f"{key}.rate", f"must be positive, got {rate!r}")
        self.check_sizes(np.array([size]), f"{key}.size", rate_cap=limit)
        ports = None
        if path is not None:                      # checked before anything is added
            if not isinstance(path, (list, tuple)):
                raise ScenarioError(f"{key}.path", f"expected a list of node ids, got {path!r}")
            ports = routing.path_ports(self.ports, list(path), f"{key}.path")
            if path[0] != src or path[-1] != dst:
                raise ScenarioError(f"{key}.path", f"must run from {src} to {dst}, got {path[0]} .. {path[-1]}")
        fid = self._append_one(key, start, after, delay, src=src, dst=dst, size=size, prio=prio, tag=tag,
                               rate_limit=limit, qp=qp)
        if ports is not None:
            self.paths[fid] = ports
        return fid

    def add_compute(self, host, duration, *, after, delay, start, tag) -> int:
        """One compute step of `duration` on `host` (see `Simulation.add_compute`); returns its id."""
        key = f"flows[{self.n}]"
        host = self.host(host, f"{key}.host")
        duration = parse_time(duration, f"{key}.duration", bare_ok=True)
        if duration <= 0:
            raise ScenarioError(f"{key}.duration", "must be positive")
        return self._append_one(key, start, after, delay, src=host, dst=host, duration=duration, compute=1, tag=tag)

    def add_table(self, table, tag=None) -> np.ndarray:
        """Every flow of a `rocesim.traffic.FlowTable`; returns their ids."""
        if not isinstance(table, FlowTable):
            raise ScenarioError("traffic", f"expected a FlowTable (rocesim.traffic makes them), got {show(table)}")
        table.validate(self.topology.n_hosts)
        self.check_sizes(table.size, "traffic", rows=True)
        n = len(table)
        return self._append("traffic", src=table.src, dst=table.dst, size=table.size, start=table.start,
                            prio=table.prio, tag=table.tag if tag is None else np.full(n, tag, np.int32),
                            dport=table.dport, qp=table.connection)

    def add_graph(self, graph) -> int:
        """Every node and edge of a `rocesim.training.graph.Graph`; returns the id of its
        node 0 (graph id k becomes id offset + k)."""
        H = self.topology.n_hosts
        cols = {name: graph.column(name) for name in ("src", "dst", "size", "duration", "start", "prio", "compute",
                                                      "delay", "tag", "collective", "iteration", "qp")}
        src, dst, size, duration, compute = (cols[k] for k in ("src", "dst", "size", "duration", "compute"))
        if src.size and (src.min() < 0 or src.max() >= H or dst.min() < 0 or dst.max() >= H):
            raise ScenarioError("graph", f"a node is placed on a host outside 0..{H - 1}")
        data = compute == 0
        if (size[data] <= 0).any() or (duration[~data] < 0).any():
            raise ScenarioError("graph", "data flows need a positive size, compute steps a duration >= 0")
        prio = cols["prio"]
        if (data & ((prio < 1) | (prio > 7))).any():
            raise ScenarioError("graph", "data flows use priorities 1..7")
        if (cols["qp"] < OWN_QP).any():
            raise ScenarioError("graph", f"a queue pair's label is a number >= 0 ({OWN_QP}: the flow's own)")
        self.check_sizes(size[data], "graph")
        for name, values in (("start", cols["start"]), ("delay", cols["delay"]), ("compute duration", duration)):
            if values.size and values.max() > MAX_TIME_PS:
                raise ScenarioError("graph", f"a node's {name} exceeds the simulator's time horizon "
                                             f"({format_time(MAX_TIME_PS)})")
        offset = self.n
        self._append("graph", **cols)
        children, parents = graph.edges(np.int32)
        if children.size:
            # ids of this graph's own nodes: int32 halves what a million-flow graph keeps
            children += np.int32(offset)
            parents += np.int32(offset)
            self.edges.append((children, parents))
        return offset

    def add_dependencies(self, children, parents) -> None:
        """Make each `children[i]` wait for `parents[i]` (arrays of ids of nodes added)."""
        children, parents = (_node_ids(ids, name, self.n) for ids, name in ((children, "children"),
                                                                            (parents, "parents")))
        if children.shape != parents.shape:
            raise ScenarioError("dependencies", "children and parents must have the same length")
        self.edges.append((children, parents))

    def host(self, h, key: str = "host") -> int:
        """`h` checked as a host id of the topology (ScenarioError naming `key` if not)."""
        H = self.topology.n_hosts
        if isinstance(h, bool) or not isinstance(h, (int, np.integer)) or not 0 <= h < H:
            raise ScenarioError(key, f"{show(h)} is not a host; hosts are 0..{H - 1}")
        return int(h)

    def check_sizes(self, size, key, rate_cap=0, rows=False) -> None:
        """Refuse flows too large for the simulator's time horizon (`MAX_TIME_PS`): every
        time the core computes for a flow (its ideal FCT first) must stay within it, so a
        flow must cross the slowest link of the topology (or its rate cap) in time, with
        headers, ACKs aside.  Above that, int64 picoseconds would overflow."""
        if not len(size):
            return
        rate = int(self.ports.rate_bps.min()) if len(self.ports.rate_bps) else 0
        rate = min(rate, rate_cap) if rate_cap else rate
        payload = self.nic["payload"]
        most = MAX_TIME_PS * rate // (8 * 10**12) * payload // frame_bytes(self.nic, True)
        most -= most % 10 ** max(0, len(str(most)) - 3)          # three digits, rounded down
        big = np.flatnonzero(np.asarray(size) > most)
        if big.size:
            row = int(big[0])
            raise ScenarioError(key, f"{'flow ' + str(row) + ': ' if rows else ''}{format_size(int(size[row]))} "
                                     f"cannot be sent at {format_rate(rate)} within the simulator's time horizon "
                                     f"({format_time(MAX_TIME_PS)}): at most {format_size(most)}")

    def _append_one(self, key, start, after, delay, **values) -> int:
        """One node of `values` (its columns) starting at `start`, or `delay` after the
        ids `after`; returns its id."""
        start = parse_time(start, f"{key}.start", bare_ok=True)
        delay = parse_time(delay, f"{key}.delay", bare_ok=True)
        fid = self.n
        after = [] if after is None else [after] if isinstance(after, (int, np.integer)) else list(after)
        for parent in after:
            if not (isinstance(parent, (int, np.integer)) and 0 <= parent < fid):
                raise ScenarioError(f"{key}.after", f"{parent!r} is not the id of an earlier flow")
        self._append(key, start=[start], delay=[delay], **{k: [v] for k, v in values.items()})
        if after:
            self.edges.append((np.full(len(after), fid, np.int64), np.asarray(after, np.int64)))
        return fid

    def _append(self, key: str, **cols) -> np.ndarray:
        """Append nodes given as columns, once they fit the memory limit (`key`: what adds them)."""
        count = len(cols["src"])
        if self.memory is not None:
            total = self.n + count
            self.memory.holds(key, f"the topology ({self.topology.n_hosts:,} hosts) with {total:,} flows and compute "
                                   "steps", memory_estimate(*self.memory.shape, total))
        ids = np.arange(self.n, self.n + count, dtype=np.int64)
        self.chunks.append(cols)
        self.n += count
        return ids

    # --- reading ---------------------------------------------------------------------

    def column(self, name: str, copy=True) -> np.ndarray:
        """One column (`COLUMNS`) over every node, in its dtype (`copy=False`: a read-only
        view of the array held, when one chunk holds the column in that dtype)."""
        dtype, default = COLUMNS[name]
        if not self.chunks:
            return np.zeros(0, dtype)
        if len(self.chunks) == 1 and not copy:
            chunk = self.chunks[0]
            if name not in chunk:
                return np.full(len(chunk["src"]), default, dtype)
            held = np.asarray(chunk[name])
            if held.dtype != dtype:
                return held.astype(dtype)
            view = held.view()
            view.flags.writeable = False
            return view
        return np.concatenate([np.asarray(c[name], dtype) if name in c
                               else np.full(len(c["src"]), default, dtype) for c in self.chunks])

    def edge_arrays(self, copy=True) -> tuple[np.ndarray, np.ndarray]:
        """(child ids, parent ids) of every dependency added so far, in the order added
        (`copy=False`: the arrays held, when there is one pair, to be read only)."""
        if not self.edges:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        if len(self.edges) == 1 and not copy:
            return self.edges[0]
        return np.concatenate([c for c, _ in self.edges]), np.concatenate([p for _, p in self.edges])

    def dependency_hosts(self) -> tuple[np.ndarray, np.ndarray]:
        """Per dependency edge, in the order added: the host where its parent completes (a
        data flow's destination, a compute step's own host) and the host where its child
        starts (its source), as two int64 arrays."""
        children, parents = self.edge_arrays()
        src, dst = self.column("src").astype(np.int64), self.column("dst").astype(np.int64)
        done = np.where(self.column("compute")[parents] != 0, src[parents], dst[parents])
        return done, src[children]

    def earliest_end(self, rate_bps: int) -> int:
        """A lower bound of when the last node can be done (ps): the latest start of a node
        without parents plus its own time (a compute step's duration, a flow's bytes at
        `rate_bps`, the fastest link); 0 without nodes."""
        if not self.n:
            return 0
        children, _ = self.edge_arrays(copy=False)
        root = np.ones(self.n, bool)
        root[children] = False
        own = np.where(self.column("compute", copy=False) != 0, self.column("duration", copy=False),
                       self.column("size", copy=False) * (8e12 / rate_bps))
        return int(min((self.column("start", copy=False) + own)[root].max(initial=0), MAX_TIME_PS))

    def core_arrays(self) -> dict:
        """The nodes, their paths and dependencies as the core's arrays (read only, no
        copies where a column is held whole); dependencies on nodes that do not exist and
        data flows between islands (rail-only) are refused."""
        F = self.n
        path_off = np.full(F, -1, np.int32)
        path_ports = []
        for fid, ports in self.paths.items():
            path_off[fid] = len(path_ports)
            path_ports.extend(ports)
        children, parents = self.edge_arrays(copy=False)
        if children.size and (children.min() < 0 or children.max() >= F
                              or parents.min() < 0 or parents.max() >= F):
            raise ScenarioError("dependencies", "a dependency names a flow id that does not exist")
        if self.topology.islands:
            self._check_islands()
        order = np.argsort(parents, kind="stable")
        n_children = np.bincount(parents, minlength=F).astype(np.int32)
        child_off = np.zeros(F, np.int32)
        if F:
            child_off[1:] = np.cumsum(n_children)[:-1]
        column = partial(self.column, copy=False)
        compute = column("compute")
        return dict(
            flow_src=column("src"), flow_dst=column("dst"),
            # the core's one amount per node: a flow's bytes, a compute step's duration
            flow_size=column("size") if not compute.any() else np.where(compute != 0, column("duration"),
                                                                         column("size")),
            flow_start=column("start"), flow_prio=column("prio"), flow_is_compute=compute.astype(np.int32),
            flow_delay=column("delay"), flow_path_off=path_off, flow_rate_limit=column("rate_limit"),
            path_ports=np.asarray(path_ports, np.int32),
            flow_n_parents=np.bincount(children, minlength=F).astype(np.int32),
            flow_child_off=child_off, flow_n_children=n_children,
            child_idx=children[order].astype(np.int32, copy=False))

    def _check_islands(self) -> None:
        """On a network of islands (rail-only), a data flow must stay inside one."""
        island = self.topology.island_of()
        src, dst = self.column("src").astype(np.int64), self.column("dst").astype(np.int64)
        bad = np.flatnonzero((self.column("compute") == 0) & (island[src] != island[dst]))
        if bad.size:
            f = int(bad[0])
            raise ScenarioError(f"flows[{f}]", f"hosts {src[f]} and {dst[f]} are on different rails of a "
                                "rail-only fabric (not connected); forward through the scale-up domain")


def _node_ids(ids, key: str, n: int) -> np.ndarray:
    """`ids` as node ids: whole numbers (never rounded) of nodes that exist, 0..n-1."""
    a = np.asarray(ids)
    if a.dtype == bool or (a.size and not np.issubdtype(a.dtype, np.integer)):
        raise ScenarioError(key, f"expected flow ids (whole numbers), got {show(ids)}")
    a = a.astype(np.int64).ravel()
    bad = a[(a < 0) | (a >= n)]
    if bad.size:
        raise ScenarioError(key, f"{int(bad[0])} is not a flow id; flows are 0..{n - 1}")
    return a
