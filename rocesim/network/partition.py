"""How a parallel packet core would cut the network into parts (issue 20, stage 0).

Nothing runs in parallel yet: this module only decides the parts, so that `rocesim check`
can show them and later stages can build on them. A part is a set of nodes whose events
one thread would run; a link whose two ends are in different parts is *cut*, and the
smallest propagation delay of a cut link is the *lookahead*: the time by which every part
may run ahead of the others without missing a packet (a packet sent at ``t`` over a cut
link arrives at ``t + delay`` or later).

The rule is a pure function of the topology, never of a thread count:

1. The NICs of a server are always in one part: scale-up transfers between its GPUs are
   dependencies with no network delay, and cutting them would delay every one.
2. ``leaves`` (the default): a server whose NICs all attach to one switch joins that
   switch (a ToR with its hosts: a *leaf group*). A server with NICs on several switches
   (rail-optimized) is a part of hosts only. Every other switch is a part of its own.
3. ``pods``: coarser. The top switch tier (the switches farthest from the hosts, in hops,
   as :meth:`Topology.host_levels` counts them) is set aside; every connected piece of the
   rest, with the leaf groups of rule 2, is a part (a pod with its hosts). The top-tier
   switches are split, in id order, into as many parts as there are pods. A network of
   one switch tier has no pods: ``pods`` gives the leaf groups.
4. ``none``: one part (the engine as it is).
5. A short link is never cut: while a cut link has a delay below ``max(1 ps, floor x the
   median delay of the cut links)`` (either direction), its two ends join one part.
   Links of zero delay are therefore never cut. (Unison, Bai et al., EuroSys '24, cuts
   only links at or above the median delay; the floor keeps two delay classes apart.)
6. The lookahead is the smallest delay of a cut port, both directions counted (0 with
   one part).
7. Parts are numbered in the order of their lowest node id.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rocesim import config
from rocesim.errors import ScenarioError
from rocesim.network.platform import Platform
from rocesim.network.routing import Ports
from rocesim.units import format_time

__all__ = ["LEVELS", "Partition", "partition", "run_parts"]

#: the granularities `partition` knows, finest first
LEVELS = ("leaves", "pods", "none")
_GROUP = {"leaves": "leaf group", "pods": "pod"}      # a part holding hosts and switches
_LEVEL_NAME = {"leaves": "leaf", "pods": "pod"}


@dataclass(frozen=True, eq=False)
class Partition:
    """The parts a parallel run would cut the network into (issue 20), from `partition`.

    The arrays are read-only. ``short_links`` counts the links kept whole because their
    delay was under the floor (rule 5 of the module docstring), ``nics_per_server`` is the
    platform's (to name the parts in `describe`).
    """

    part_of_node: np.ndarray     # int32 [n_nodes]: parts numbered by their lowest node id
    n_parts: int
    lookahead_ps: int            # smallest delay of a cut port; 0 with 1 part
    cut_port: np.ndarray         # bool [n_ports]: the port's link joins two parts
    level: str                   # "leaves" | "pods" | "none"
    n_hosts: int
    nics_per_server: int = 1
    short_links: int = 0

    @property
    def n_cut_ports(self) -> int:
        """Ports whose link joins two parts (both ends of a cut link count)."""
        return int(np.count_nonzero(self.cut_port))

    def describe(self) -> str:
        """One line: the parts and what they hold, the lookahead and the ports cut; with one
        part, why (e.g. ``"20 parts at the leaf level (8 leaf groups, 12 switches),
        lookahead 1us, 64/96 ports cut"``)."""
        if self.level == "none":
            return "1 part (level none: the whole network in one engine)"
        at = f"at the {_LEVEL_NAME[self.level]} level"
        if self.n_parts == 1:
            why = ("every link it would cut is too short to overlap on" if self.short_links
                   else f"the whole network is one {_GROUP[self.level]}")
            return f"1 part {at}: {why}"
        text = (f"{self.n_parts} parts {at} ({self._contents()}), lookahead {format_time(self.lookahead_ps)}, "
                f"{self.n_cut_ports}/{self.cut_port.size} ports cut")
        if self.short_links:
            text += f", {_plural(self.short_links, 'link')} too short to cut kept whole"
        return text

    def _contents(self) -> str:
        """What the parts hold: leaf groups (or pods), servers, other groups of hosts,
        switches alone, groups of switches."""
        H, P = self.n_hosts, self.n_parts
        hosts = np.bincount(self.part_of_node[:H], minlength=P)
        switches = np.bincount(self.part_of_node[H:], minlength=P)
        no_switch, no_host = switches == 0, hosts == 0
        kinds = [(~no_host & ~no_switch, _GROUP[self.level]),
                 (no_switch & (hosts == self.nics_per_server), "server"),
                 (no_switch & ~no_host & (hosts != self.nics_per_server), "host group"),
                 (no_host & (switches == 1), "switch"),
                 (no_host & (switches > 1), "switch group")]
        return ", ".join(_plural(int(np.count_nonzero(mask)), word) for mask, word in kinds if mask.any())

    def tiers(self, host_levels) -> np.ndarray:
        """Per part (int32), its tier: the fewest links from a host to one of its nodes, from
        ``host_levels`` (`Topology.host_levels`: 0 for a part holding hosts; a part no host
        reaches gets the node count). The threads share each tier's parts out among them
        (the core's window.pyx, `_homes`)."""
        level = np.asarray(host_levels, np.int64)
        level = np.where(level < 0, level.size, level)
        tier = np.full(self.n_parts, level.size, np.int64)
        np.minimum.at(tier, self.part_of_node, level)
        return tier.astype(np.int32)

    def crossing_share(self, done_host, start_host) -> float:
        """The share of dependency edges whose parent completes in another part than the one
        where its child starts (0.0 without edges).

        ``done_host[i]`` is the host where edge ``i``'s parent completes (a data flow's
        destination, a compute step's own host), ``start_host[i]`` the host where its child
        starts (its source). Such an edge is a message between parts in a parallel run."""
        done = np.asarray(done_host, np.int64)
        start = np.asarray(start_host, np.int64)
        if done.shape != start.shape:
            raise ValueError(f"dependencies: {done.size} parent hosts for {start.size} child hosts")
        if not done.size:
            return 0.0
        for hosts in (done, start):
            if hosts.min() < 0 or hosts.max() >= self.n_hosts:
                raise ValueError(f"dependencies: a host outside 0..{self.n_hosts - 1}")
        part = self.part_of_node
        return float(np.count_nonzero(part[done] != part[start]) / done.size)


def partition(platform: Platform, ports: Ports, level: str = "leaves", floor: float = 0.1) -> Partition:
    """The parts of ``platform``'s network (its topology flattened into ``ports`` by
    `rocesim.network.routing.build_ports`) at ``level`` (``"leaves"``, ``"pods"`` or
    ``"none"``); a cut link has a delay of at least ``floor`` (0 to 1) times the median
    delay of the cut links. The module docstring states the rule."""
    if not isinstance(level, str) or level not in LEVELS:
        raise ScenarioError("partition", f"expected one of {', '.join(LEVELS)}, got {level!r}")
    if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not 0 <= floor <= 1:
        raise ScenarioError("partition.floor", f"expected a fraction of the median cut delay (0 to 1), "
                                               f"got {floor!r}")
    topo = platform.topology
    N, H = topo.n_nodes, topo.n_hosts
    if (ports.n_nodes, ports.node.size) != (N, 2 * topo.n_links):
        raise ValueError(f"{ports.node.size} ports of {ports.n_nodes} nodes are not those of the "
                         f"platform's topology ({topo.n_links} links, {N} nodes)")
    a, b = ports.node.astype(np.int64), ports.peer_node.astype(np.int64)
    delay = ports.delay_ps
    if level == "none":
        return _made(np.zeros(N, np.int64), a, b, delay, level, H, platform.nics_per_server, 0)
    joins = [_server_joins(platform), _leaf_joins(platform, ports)]
    if level == "pods":
        joins += _pod_joins(topo.host_levels(), a, b, joins)
    root = _components(N, joins)
    short = np.zeros(a.size, bool)
    while True:                                        # rule 5: merge short cut links
        cut = root[a] != root[b]
        if not cut.any():
            break
        floor_ps = max(1.0, floor * float(np.median(delay[cut])))
        new = cut & (delay < floor_ps)
        if not new.any():
            break
        short |= new
        joins.append((a[new], b[new]))
        root = _components(N, joins)
    short_ports = np.flatnonzero(short)
    short_links = np.unique(np.minimum(short_ports, ports.peer[short_ports])).size
    return _made(root, a, b, delay, level, H, platform.nics_per_server, short_links)


def run_parts(asked: str, mode: str, platform: Platform, ports: Ports) -> tuple[str, Partition | None]:
    """(the level a run takes for `partition` `asked`, its Partition or None for one part:
    the engine as always).  'auto' is `config.AUTO_PARTITION` in packet mode and one part in
    flow mode, which refuses any other level that gives parts; a level giving one part
    (a star, say) runs as one part."""
    level = config.AUTO_PARTITION if asked == "auto" else asked
    if level == "none":
        return level, None
    parts = partition(platform, ports, level)
    if parts.n_parts == 1:
        return level, None
    if mode == "flow":
        if asked == "auto":
            return "none", None
        raise ScenarioError("mode", f"flow mode runs in one part: a run in parts (partition: {level}) is for "
                                    "packet mode; use partition: none")
    return level, parts


def _grouped(parts: Partition, ports: Ports, groups: int) -> Partition:
    """Debug (validation/parallel_model.py, issue 20 stage 6): `parts` coarsened into
    `groups` parts of consecutive part numbers (part k joins group k * groups // n_parts),
    to time a run at a part count between the levels; the cut ports and the lookahead
    follow.  Not a level a run can ask for."""
    if not 1 <= groups <= parts.n_parts:
        raise ValueError(f"groups: expected 1..{parts.n_parts}, got {groups}")
    group = parts.part_of_node.astype(np.int64) * groups // parts.n_parts
    return _made(group, ports.node.astype(np.int64), ports.peer_node.astype(np.int64), ports.delay_ps,
                 parts.level, parts.n_hosts, parts.nics_per_server, parts.short_links)


def _made(root, a, b, delay, level, n_hosts, nics, short_links) -> Partition:
    """The Partition of the components ``root`` (each node's lowest node id in its part)."""
    _, part = np.unique(root, return_inverse=True)     # numbered by lowest node id
    part = part.astype(np.int32).ravel()
    cut = part[a] != part[b]
    for array in (part, cut):
        array.flags.writeable = False
    lookahead = int(delay[cut].min()) if cut.any() else 0
    return Partition(part, int(part.max(initial=-1)) + 1, lookahead, cut, level, n_hosts, nics, int(short_links))


def _server_joins(platform: Platform):
    """Rule 1: every NIC host joined to its server's first NIC."""
    hosts = np.arange(platform.topology.n_hosts, dtype=np.int64)
    return hosts, hosts - hosts % platform.nics_per_server


def _leaf_joins(platform: Platform, ports: Ports):
    """Rule 2: the first NIC of a server whose NICs all attach to one switch, joined to it."""
    H, n = platform.topology.n_hosts, platform.nics_per_server
    attach = ports.peer_node[ports.host_port].astype(np.int64).reshape(-1, n)     # [server, NIC]
    whole = (attach == attach[:, :1]).all(axis=1) & (attach[:, 0] >= H)
    return np.flatnonzero(whole) * n, attach[whole, 0]


def _pod_joins(level, a, b, joins) -> list:
    """Rule 3, given the joins of rules 1 and 2: the ports below the top tier join their
    ends (the pods), and the top-tier switches, in id order, are joined into as many groups
    as there are pods. Nothing when the fabric has one switch tier."""
    top = int(level.max(initial=0))
    if top < 2:
        return []
    below = (level[a] < top) & (level[b] < top)
    pods = (a[below], b[below])
    n_pods = np.unique(_components(level.size, joins + [pods])[level < top]).size
    tops = np.flatnonzero(level == top)
    groups = np.array_split(tops, min(n_pods, tops.size))
    return [pods, (tops, np.concatenate([np.full(g.size, g[0]) for g in groups]))]


def _components(n: int, joins) -> np.ndarray:
    """Per node, the lowest node id of its connected component in the graph of ``n`` nodes
    whose edges are the pairs of arrays in ``joins`` (min-label propagation with pointer
    jumping: a few numpy passes, not a loop over nodes)."""
    a = np.concatenate([np.asarray(x, np.int64) for x, _ in joins] + [np.zeros(0, np.int64)])
    b = np.concatenate([np.asarray(y, np.int64) for _, y in joins] + [np.zeros(0, np.int64)])
    label = np.arange(n, dtype=np.int64)
    while True:
        new = label.copy()
        low = np.minimum(label[a], label[b])
        np.minimum.at(new, a, low)
        np.minimum.at(new, b, low)
        while True:                   # each label is a node of the same component, no higher
            jumped = new[new]
            if np.array_equal(jumped, new):
                break
            new = jumped
        if np.array_equal(new, label):
            return label
        label = new


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 'es' if word.endswith('ch') else 's'}"
