"""Ports and routing tables: the topology flattened into the arrays the core reads.

Each full-duplex link a-b becomes two ports: port 2*l at node a (transmitting
towards b) and port 2*l+1 at node b.  Routes are shortest paths in hops from
every switch to every host, keeping all equal-cost next hops for ECMP (as the
HPCC ns-3 fork's BFS does).  Hosts never forward.  Two kinds of explicit routes
override the tables so that pathologies (loops, cyclic buffer dependencies) can be
built on purpose:

* per-switch next-hop overrides: at switch S, traffic to host D leaves towards
  node N (``{switch: S, dst: D, next: N}``);
* per-flow paths: the whole node sequence of a flow's data packets.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rocesim.errors import ScenarioError


@dataclass
class Ports:
    """Directed ports of a topology (see the module docstring for the numbering)."""

    node: np.ndarray        # int32: owning node
    peer: np.ndarray        # int32: port at the other end
    rate_bps: np.ndarray    # int64: transmit rate
    delay_ps: np.ndarray    # int64: propagation delay of the wire leaving this port
    host_port: np.ndarray   # int32: the port of each host
    n_hosts: int
    n_nodes: int

    @property
    def peer_node(self) -> np.ndarray:
        return self.node[self.peer]

    def between(self, a: int, b: int) -> int:
        """The (first) port at node a whose link leads to node b; -1 if none."""
        hits = np.flatnonzero((self.node == a) & (self.peer_node == b))
        return int(hits[0]) if hits.size else -1


def build_ports(topo) -> Ports:
    """Number the ports of `topo` (a validated `rocesim.topology.Topology`)."""
    n_links = topo.n_links
    node = np.empty(2 * n_links, np.int32)
    node[0::2] = topo.link_a
    node[1::2] = topo.link_b
    peer = np.arange(2 * n_links, dtype=np.int32) ^ 1
    rate = np.empty(2 * n_links, np.int64)
    rate[0::2] = topo.rate_ab
    rate[1::2] = topo.rate_ba
    delay = np.empty(2 * n_links, np.int64)
    delay[0::2] = topo.delay_ab
    delay[1::2] = topo.delay_ba
    host_port = np.full(topo.n_hosts, -1, np.int32)
    is_host = node < topo.n_hosts
    host_port[node[is_host]] = np.flatnonzero(is_host)
    return Ports(node, peer, rate, delay, host_port, topo.n_hosts, topo.n_nodes)


@dataclass
class RouteTables:
    """Equal-cost egress ports per (switch, destination host), in CSR form."""

    off: np.ndarray      # int32 [(switch - H) * H + dst]
    cnt: np.ndarray      # int32
    ports: np.ndarray    # int32
    farthest: np.ndarray  # int32 [H]: a host at the largest hop distance from each host


def _host_distances(ports: Ports, alive=None) -> np.ndarray:
    """Hop distance from every node to every host, int32 [n_nodes, n_hosts]; -1 = unreachable.

    Breadth-first search from each host over switches only (hosts do not forward), over
    the ports in `alive` (all by default).
    """
    H, N = ports.n_hosts, ports.n_nodes
    idx = np.arange(len(ports.node)) if alive is None else np.flatnonzero(alive)
    order = idx[np.argsort(ports.node[idx], kind="stable")]
    nbr_sorted = ports.peer_node[order]
    start = np.searchsorted(ports.node[order], np.arange(N + 1))
    dist = np.full((N, H), -1, np.int32)
    for d in range(H):
        col = dist[:, d]
        col[d] = 0
        frontier = np.array([d])
        level = 0
        while frontier.size:
            level += 1
            nbrs = np.unique(nbr_sorted[_ranges(start[frontier], start[frontier + 1])])
            nbrs = nbrs[col[nbrs] < 0]
            col[nbrs] = level
            frontier = nbrs[nbrs >= H]          # only switches forward further
    return dist


def uplinks(ports: Ports) -> np.ndarray:
    """Per port (int32 0/1): a switch port whose peer is a switch of a higher layer, the
    layer of a node being its hop distance to the nearest host (ToR 1, aggregation or
    spine 2, core 3).  Up-down routing goes up such ports, then only down."""
    dist = _host_distances(ports)
    level = np.where(dist >= 0, dist, np.iinfo(np.int32).max).min(axis=1)
    peer_level = level[ports.peer_node]
    return ((ports.node >= ports.n_hosts) & (ports.peer_node >= ports.n_hosts)
            & (peer_level > level[ports.node])).astype(np.int32)


def _ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Concatenation of arange(lo[i], hi[i]) for all i, without a Python loop."""
    counts = hi - lo
    total = int(counts.sum())
    starts = np.repeat(lo - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
    return starts + np.arange(total)


def build_routes(ports: Ports, overrides=(), alive=None) -> RouteTables:
    """Shortest-path ECMP tables, with per-switch next-hop overrides applied.

    `overrides` is a sequence of (switch, dst, next_node) triples; they stay as given
    whatever links are down (a static route does not follow the topology).  `alive`
    (a boolean per port, default all) leaves out the ports of links that are down, as
    ECMP does once routing has converged after a failure.
    """
    H, N = ports.n_hosts, ports.n_nodes
    dist = _host_distances(ports, alive)
    node, peer_node = ports.node, ports.peer_node
    sw_ports = np.flatnonzero((node >= H) if alive is None else (node >= H) & alive)
    u, v = node[sw_ports], peer_node[sw_ports]
    # port p (at switch u, towards v) is a next hop to host d iff dist[v, d] == dist[u, d] - 1,
    # and v is a switch or v is d itself
    du, dv = dist[u], dist[v]                                     # [n_sw_ports, H]
    ok = (dv >= 0) & (du > 0) & (dv == du - 1)
    ok &= (v[:, None] >= H) | (v[:, None] == np.arange(H)[None, :])
    pi, d = np.nonzero(ok)
    keys = (u[pi].astype(np.int64) - H) * H + d
    entries = sw_ports[pi].astype(np.int32)
    if len(overrides):
        keys, entries = _apply_overrides(ports, keys, entries, overrides)
    order = np.lexsort((entries, keys))
    keys, entries = keys[order], entries[order]
    cnt = np.bincount(keys, minlength=(N - H) * H).astype(np.int32)
    off = np.zeros((N - H) * H, np.int32)
    if cnt.size:
        off[1:] = np.cumsum(cnt)[:-1]
    host_hops = np.where(dist[:H] >= 0, dist[:H], -1)
    return RouteTables(off, cnt, entries, np.argmax(host_hops, axis=1).astype(np.int32))


def _apply_overrides(ports: Ports, keys, entries, overrides):
    H, N = ports.n_hosts, ports.n_nodes
    drop = np.zeros(keys.shape[0], bool)
    new_keys, new_entries = [], []
    for k, (sw, dst, nxt) in enumerate(overrides):
        where = f"routes[{k}]"
        if not (H <= sw < N):
            raise ScenarioError(f"{where}.switch", f"{sw} is not a switch (switches are {H}..{N - 1})")
        if not (0 <= dst < H):
            raise ScenarioError(f"{where}.dst", f"{dst} is not a host (hosts are 0..{H - 1})")
        port = ports.between(sw, nxt)
        if port < 0:
            raise ScenarioError(f"{where}.next", f"node {nxt} is not a neighbour of switch {sw}")
        key = (sw - H) * H + dst
        drop |= keys == key
        new_keys.append(key)
        new_entries.append(port)
    keys = np.concatenate([keys[~drop], np.array(new_keys, np.int64)])
    entries = np.concatenate([entries[~drop], np.array(new_entries, np.int32)])
    return keys, entries


def path_ports(ports: Ports, path, key: str = "path") -> list[int]:
    """Egress ports at each switch of an explicit node path [src, s1, ..., dst]."""
    H = ports.n_hosts
    if len(path) < 3:
        raise ScenarioError(key, "a path lists the source host, at least one switch, and the destination host")
    if not (0 <= path[0] < H and 0 <= path[-1] < H):
        raise ScenarioError(key, f"a path must start and end at hosts (0..{H - 1}), got {path[0]} and {path[-1]}")
    for n in path[1:-1]:
        if not (H <= n < ports.n_nodes):
            raise ScenarioError(key, f"node {n} inside the path is not a switch")
    if len(path) - 2 > 250:
        raise ScenarioError(key, "a path may cross at most 250 switches")
    out = []
    for a, b in zip(path, path[1:]):
        port = ports.between(a, b)
        if port < 0:
            raise ScenarioError(key, f"nodes {a} and {b} are not linked")
        if a >= H:
            out.append(port)
    return out
