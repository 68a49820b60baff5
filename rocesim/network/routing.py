"""Ports and routing tables: the topology flattened into the arrays the core reads.

Each full-duplex link a-b becomes two ports: port 2*l at node a (transmitting
towards b) and port 2*l+1 at node b.  Routes are shortest paths in hops from
every switch to every host, keeping all equal-cost next hops for ECMP (as the
HPCC ns-3 fork's BFS does).  Hosts never forward.  The tables are compact: the
hosts behind one ToR share one ECMP group per switch (a breadth-first search per
ToR, not per host; see `RouteTables`), so a k=32 fat tree (8192 hosts) builds in
about 2 s and 360 MB.  Two kinds of explicit routes
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
    """Number the ports of `topo` (a validated `rocesim.network.topology.Topology`)."""
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
    """Equal-cost egress ports per (switch, destination class), in CSR form.

    Hosts behind the same switch (their only link, alive, and no explicit route naming
    them) form one destination class, that switch's *ToR class*: every other switch
    reaches them by the same equal-cost ports, so they share one ECMP group per switch
    (a k=32 fat tree has 512 classes for 8192 hosts).  Any other host (an explicit route
    names it, its link is down, or it is linked to a host) is a class of its own, routed
    exactly as before.  Row ``(switch - H) * n_classes + class`` holds ``cnt`` ports from
    ``ports[off]``; ``cnt == -1`` marks a ToR class at its own switch: the egress port
    towards host ``d`` is then ``ports[off + d]`` (direct delivery).
    """

    group_off: np.ndarray   # int32 [(switch - H) * n_classes + class]
    group_cnt: np.ndarray   # int32; -1: direct delivery (see above)
    ports: np.ndarray       # int32: the groups' ports, then one direct port per host
    host_class: np.ndarray  # int32 [H]: destination class of each host
    n_classes: int
    farthest: np.ndarray    # int32 [H]: a host at the largest hop distance from each host
    node_level: np.ndarray | None = None   # per node: hops to the nearest host (all links alive)

    @property
    def n_hosts(self) -> int:
        return len(self.host_class)

    def _dense_rows(self) -> np.ndarray:
        H, C = self.n_hosts, self.n_classes
        S = len(self.group_cnt) // max(C, 1)
        return (np.arange(S, dtype=np.int64)[:, None] * C + self.host_class[None, :]).ravel()

    @property
    def cnt(self) -> np.ndarray:
        """Per (switch, destination host) [(switch - H) * H + dst]: how many equal-cost
        ports (a dense view for inspection: S x H entries, built on demand)."""
        cnt = self.group_cnt[self._dense_rows()]
        return np.where(cnt < 0, 1, cnt).astype(np.int32)

    @property
    def off(self) -> np.ndarray:
        """Per (switch, destination host): where its ports start in `ports` (dense view)."""
        rows = self._dense_rows()
        off = self.group_off[rows].astype(np.int64)
        direct = self.group_cnt[rows] < 0
        off[direct] += np.tile(np.arange(self.n_hosts), len(rows) // max(self.n_hosts, 1))[direct]
        return off.astype(np.int32)


def _adjacency(ports: Ports, alive=None):
    """Ports sorted by owning node and the start of each node's run: the graph for BFS."""
    N = ports.n_nodes
    idx = np.arange(len(ports.node)) if alive is None else np.flatnonzero(alive)
    order = idx[np.argsort(ports.node[idx], kind="stable")]
    return ports.peer_node[order], np.searchsorted(ports.node[order], np.arange(N + 1))


def _bfs(nbr_sorted, start, col, seed: int, level: int, n_hosts: int) -> None:
    """Hop distances into `col` (int32 [n_nodes], -1 = unreached) from node `seed` at
    `level`, expanding switches only after the seed (hosts do not forward)."""
    col[seed] = level
    frontier = np.array([seed])
    seen = np.zeros(len(col), bool)
    while frontier.size:
        level += 1
        nbrs = nbr_sorted[_ranges(start[frontier], start[frontier + 1])]
        nbrs = nbrs[col[nbrs] < 0]
        seen[nbrs] = True                     # deduplicate without sorting
        nbrs = np.flatnonzero(seen)
        seen[nbrs] = False
        col[nbrs] = level
        frontier = nbrs[nbrs >= n_hosts]


def _classes(ports: Ports, alive=None, pinned=()):
    """Destination classes (see `RouteTables`): host_class [H], and per class its ToR
    switch (or -1) and its only host (or -1)."""
    H = ports.n_hosts
    hp = ports.host_port
    tor = ports.peer_node[hp]
    shared = tor >= H
    if alive is not None:
        shared &= alive[hp]
    if len(pinned):
        shared[np.asarray(pinned, np.int64)] = False
    tors, tor_class = np.unique(tor[shared], return_inverse=True)
    own = np.flatnonzero(~shared)
    host_class = np.empty(H, np.int32)
    host_class[shared] = tor_class
    host_class[own] = len(tors) + np.arange(len(own))
    class_tor = np.concatenate([tors, np.full(len(own), -1)]).astype(np.int64)
    class_host = np.concatenate([np.full(len(tors), -1), own]).astype(np.int64)
    return host_class, class_tor, class_host


def _class_distances(ports: Ports, class_tor, class_host, alive=None) -> np.ndarray:
    """Hop distance from every node to each destination class, int32 [n_nodes, classes];
    -1 = unreachable.  A ToR class's distance is that of any of its hosts (the BFS starts at
    its switch, one hop away); the class's own hosts read 2, like the host's neighbours."""
    H, N = ports.n_hosts, ports.n_nodes
    nbr_sorted, start = _adjacency(ports, alive)
    dist = np.full((len(class_tor), N), -1, np.int32)     # one row per class while filling
    for c, (t, h) in enumerate(zip(class_tor, class_host)):
        if t >= 0:
            _bfs(nbr_sorted, start, dist[c], int(t), 1, H)
        else:
            _bfs(nbr_sorted, start, dist[c], int(h), 0, H)
    return dist


def _host_distances(ports: Ports, alive=None) -> np.ndarray:
    """Hop distance from every node to every host, int32 [n_nodes, n_hosts] (dense: for
    small fabrics and tests; routing itself works per destination class)."""
    host_class, class_tor, class_host = _classes(ports, alive)
    dist = _class_distances(ports, class_tor, class_host, alive).T[:, host_class]
    dist[np.arange(ports.n_hosts), np.arange(ports.n_hosts)] = 0
    return dist


def _node_levels(dist_by_class: np.ndarray, n_hosts: int) -> np.ndarray:
    """Hop distance of every node to its nearest host (hosts 0), from [classes, nodes]."""
    level = np.where(dist_by_class >= 0, dist_by_class, np.iinfo(np.int32).max).min(axis=0, initial=np.iinfo(np.int32).max)
    level[:n_hosts] = 0
    return level


def uplinks(ports: Ports, tables: RouteTables | None = None) -> np.ndarray:
    """Per port (int32 0/1): a switch port whose peer is a switch of a higher layer, the
    layer of a node being its hop distance to the nearest host (ToR 1, aggregation or
    spine 2, core 3).  Up-down routing goes up such ports, then only down.  `tables`
    (built with every link alive) saves recomputing the distances."""
    if tables is not None and tables.node_level is not None:
        level = tables.node_level
    else:
        _, class_tor, class_host = _classes(ports)
        level = _node_levels(_class_distances(ports, class_tor, class_host), ports.n_hosts)
    peer_level = level[ports.peer_node]
    return ((ports.node >= ports.n_hosts) & (ports.peer_node >= ports.n_hosts)
            & (peer_level > level[ports.node])).astype(np.int32)


def _ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Concatenation of arange(lo[i], hi[i]) for all i, without a Python loop."""
    counts = hi - lo
    total = int(counts.sum())
    starts = np.repeat(lo - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
    return starts + np.arange(total)


_CHUNK_CELLS = 1 << 22      # (switch port, class) pairs compared at once: bounds the memory


def build_routes(ports: Ports, overrides=(), alive=None) -> RouteTables:
    """Shortest-path ECMP tables, with per-switch next-hop overrides applied.

    `overrides` is a sequence of (switch, dst, next_node) triples; they stay as given
    whatever links are down (a static route does not follow the topology).  `alive`
    (a boolean per port, default all) leaves out the ports of links that are down, as
    ECMP does once routing has converged after a failure.  Port p (at switch u, towards
    v) is a next hop to a destination class iff v is one hop closer to it (and v is a
    switch, or the class's own host).
    """
    H, N = ports.n_hosts, ports.n_nodes
    S = N - H
    overrides = list(overrides)
    _check_overrides(ports, overrides)
    host_class, class_tor, class_host = _classes(ports, alive, [d for _, d, _ in overrides])
    C = len(class_tor)
    dist = _class_distances(ports, class_tor, class_host, alive)     # [classes, nodes]
    node, peer_node = ports.node, ports.peer_node
    sw_ports = np.flatnonzero((node >= H) if alive is None else (node >= H) & alive)
    u, v = node[sw_ports], peer_node[sw_ports]
    keys, entries = [], []
    step = max(1, _CHUNK_CELLS // max(len(sw_ports), 1))
    for c0 in range(0, C, step):
        cs = np.arange(c0, min(C, c0 + step))
        du, dv = dist[cs][:, u], dist[cs][:, v]                  # [classes, switch ports]
        ok = (dv >= 0) & (du > 0) & (dv == du - 1)
        ok &= (v[None, :] >= H) | (v[None, :] == class_host[cs][:, None])
        ci, pi = np.nonzero(ok)
        keys.append((u[pi].astype(np.int64) - H) * C + cs[ci])
        entries.append(sw_ports[pi].astype(np.int32))
    keys = np.concatenate(keys) if keys else np.zeros(0, np.int64)
    entries = np.concatenate(entries) if entries else np.zeros(0, np.int32)
    if overrides:
        keys, entries = _apply_overrides(ports, keys, entries, overrides, host_class, C)
    order = np.argsort(keys, kind="stable")       # within a group: ascending port
    keys, entries = keys[order], entries[order]
    cnt = np.bincount(keys, minlength=S * C).astype(np.int32)
    off = np.zeros(S * C, np.int32)
    if cnt.size:
        off[1:] = np.cumsum(cnt)[:-1]
    off, entries = _share_groups(off, cnt, entries)
    # direct delivery: a ToR class at its own switch leaves by the port towards the host
    tor_cls = np.flatnonzero(class_tor >= 0)
    direct_rows = (class_tor[tor_cls] - H) * C + tor_cls
    cnt[direct_rows] = -1
    off[direct_rows] = len(entries)
    direct = ports.peer[ports.host_port].astype(np.int32)
    return RouteTables(off, cnt, np.concatenate([entries, direct]), host_class, C,
                       _farthest(dist[:, :H].T, host_class, C),
                       _node_levels(dist, H) if alive is None else None)


def _share_groups(off, cnt, entries):
    """Store each distinct ECMP group once (an edge switch sends every remote ToR class
    up the same ports): rows with equal port lists point at one copy.  Keeps the table
    small enough to stay in cache on large fabrics (a k=32 fat tree: 8.4 M entries ->
    a few thousand)."""
    rows = np.flatnonzero(cnt > 0)
    if rows.size == 0:
        return off, entries
    c = cnt[rows].astype(np.int64)
    # a random-weighted sum of each row's ports identifies it (then checked exactly)
    pos_in_row = np.arange(entries.size) - np.repeat(off[rows].astype(np.int64), c)
    weights = np.random.default_rng(12345).integers(1, 2**61, int(c.max()), dtype=np.int64)
    w = weights[pos_in_row] * (entries.astype(np.int64) + 1)
    sig = np.add.reduceat(w, off[rows].astype(np.int64)) if entries.size else np.zeros(0, np.int64)
    sig = sig + c * np.int64(-7046029254386353131)          # the length counts too (wrapping)
    _, first, inverse = np.unique(sig, return_index=True, return_inverse=True)
    rep = rows[first][inverse.ravel()]                      # each row's representative row
    src = np.repeat(off[rep].astype(np.int64), c) + pos_in_row
    if not np.array_equal(entries[src], entries):
        return off, entries                                 # a signature clash: keep them apart
    uniq_rows = rows[first]
    new_off = np.zeros(uniq_rows.size, np.int64)
    new_off[1:] = np.cumsum(cnt[uniq_rows].astype(np.int64))[:-1]
    uc = cnt[uniq_rows].astype(np.int64)
    shared = entries[np.repeat(off[uniq_rows].astype(np.int64), uc) + np.arange(int(uc.sum()))
                     - np.repeat(new_off, uc)]
    out = off.copy()
    out[rows] = new_off[inverse.ravel()]
    return out.astype(np.int32), shared.astype(np.int32)


def _farthest(host_dist: np.ndarray, host_class: np.ndarray, C: int) -> np.ndarray:
    """Per host x the first host (lowest id) at the largest hop distance from x; x itself
    when no other host is reachable.  `host_dist` is [H, classes]."""
    H = len(host_class)
    first = np.full(C, H, np.int64)
    np.minimum.at(first, host_class, np.arange(H))
    rest = np.ones(H, bool)
    rest[first[first < H]] = False
    second = np.full(C, H, np.int64)
    np.minimum.at(second, host_class[rest], np.flatnonzero(rest))
    cand = np.broadcast_to(first, (H, C)).copy()
    me = np.arange(H)
    mine = cand[me, host_class] == me
    cand[me[mine], host_class[mine]] = second[host_class[mine]]
    val = np.where(cand < H, host_dist, -2)
    best = val.max(axis=1, initial=-2)
    pick = np.where(val == best[:, None], cand, H).min(axis=1)
    return np.where(best > 0, pick, me).astype(np.int32)


def parse_overrides(routes) -> list[tuple[int, int, int]]:
    """The `routes:` list of {switch, dst, next} as (switch, dst, next) tuples, their form checked
    (`build_routes` checks the nodes and links they name)."""
    if not isinstance(routes, list):
        raise ScenarioError("routes", "expected a list of {switch, dst, next}")
    out = []
    for k, r in enumerate(routes):
        if not isinstance(r, dict) or set(r) != {"switch", "dst", "next"}:
            raise ScenarioError(f"routes[{k}]", "expected exactly the keys switch, dst, next")
        for name in ("switch", "dst", "next"):
            if isinstance(r[name], bool) or not isinstance(r[name], int):
                raise ScenarioError(f"routes[{k}].{name}", f"expected a node id, got {r[name]!r}")
        out.append((r["switch"], r["dst"], r["next"]))
    return out


def _check_overrides(ports: Ports, overrides) -> None:
    H, N = ports.n_hosts, ports.n_nodes
    for k, (sw, dst, nxt) in enumerate(overrides):
        where = f"routes[{k}]"
        if not (H <= sw < N):
            raise ScenarioError(f"{where}.switch", f"{sw} is not a switch (switches are {H}..{N - 1})")
        if not (0 <= dst < H):
            raise ScenarioError(f"{where}.dst", f"{dst} is not a host (hosts are 0..{H - 1})")
        if ports.between(sw, nxt) < 0:
            raise ScenarioError(f"{where}.next", f"node {nxt} is not a neighbour of switch {sw}")


def _apply_overrides(ports: Ports, keys, entries, overrides, host_class, C):
    """Replace the group of (switch, dst's own class) by the override's port(s)."""
    H = ports.n_hosts
    drop = np.zeros(keys.shape[0], bool)
    new_keys, new_entries = [], []
    for sw, dst, nxt in sorted(overrides, key=lambda o: ((o[0] - H) * C + int(host_class[o[1]]),
                                                            ports.between(o[0], o[2]))):
        key = (sw - H) * C + int(host_class[dst])
        drop |= keys == key
        new_keys.append(key)
        new_entries.append(ports.between(sw, nxt))
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
