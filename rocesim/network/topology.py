"""Network topologies: the graph of hosts, switches and full-duplex links.

Node numbering is fixed throughout rocesim: hosts are nodes ``0 .. n_hosts-1`` and
switches follow them, ``n_hosts .. n_nodes-1``. Every link is full duplex with its own
rate (bits per second) and propagation delay (picoseconds) in each direction; the
direction ``a -> b`` is the one the link was added with.

This module holds the :class:`Topology` graph, builders for the usual datacenter shapes
(:func:`star`, :func:`dumbbell`, :func:`leaf_spine`, :func:`fat_tree`, :func:`clos3`,
:func:`hpcc_320`) and import/export of the HPCC ns-3 topology file format
(:func:`from_hpcc_file`, :func:`to_hpcc_file`).
"""

from __future__ import annotations

import operator
import os
from collections import deque
from pathlib import Path

import numpy as np

from rocesim._textfile import Line, declared_records, end_of_file_error, read_lines
from rocesim.errors import ScenarioError
from rocesim.units import format_rate, parse_rate, parse_time

__all__ = [
    "Topology",
    "star",
    "dumbbell",
    "leaf_spine",
    "fat_tree",
    "clos3",
    "hpcc_320",
    "from_hpcc_file",
    "to_hpcc_file",
    "memory_estimate",
    "default_memory_limit",
    "approx_bytes",
    "shape",
]

_LINK_COLUMNS = ("link_a", "link_b", "rate_ab", "rate_ba", "delay_ab", "delay_ba")


def _as_int(value: object, key: str) -> int:
    """``value`` as a Python int (numpy integers included, booleans refused)."""
    if isinstance(value, bool):
        raise ScenarioError(key, f"expected an integer, got {value}")
    try:
        return operator.index(value)
    except TypeError:
        raise ScenarioError(key, f"expected an integer, got {value!r}") from None


def _count(value: object, key: str) -> int:
    """A positive integer parameter such as a number of hosts."""
    number = _as_int(value, key)
    if number < 1:
        raise ScenarioError(key, f"must be a positive integer, got {number}")
    return number


def _rate(value: int | str | None, key: str, default: int | None = None) -> int:
    """A link rate in bps from an int or a unit string; ``None`` gives ``default``."""
    return default if value is None else parse_rate(value, key, bare_ok=True)


def _delay(value: int | str | None, key: str, default: int | None = None) -> int:
    """A link delay in ps from an int or a unit string; ``None`` gives ``default``."""
    return default if value is None else parse_time(value, key, bare_ok=True)


class Topology:
    """A network of hosts and switches joined by full-duplex links.

    Hosts are nodes ``0 .. n_hosts-1``; each :meth:`add_switch` call appends the next node
    id. Links are numbered in the order they were added. The link columns
    (:attr:`link_a`, :attr:`rate_ab`, ...) are read-only numpy ``int64`` arrays built on
    first use.

    Topologies read from a file that numbered nodes differently keep the mapping in
    :attr:`original_ids` and :attr:`file_id_to_node`.
    """

    def __init__(self, n_hosts: int, name: str = "custom") -> None:
        self._n_hosts = _count(n_hosts, "topology.hosts")
        self._n_switches = 0
        self.name = name
        self._columns: dict[str, list[int]] = {column: [] for column in _LINK_COLUMNS}
        self._arrays: dict[str, np.ndarray] = {}
        self._node_links: list[list[int]] = [[] for _ in range(self._n_hosts)]
        self._original_ids: np.ndarray | None = None
        #: whether the network may fall apart into islands that each hold hosts (a rail-only
        #: fabric: rails joined only inside servers); traffic then stays within an island
        self.islands = False

    def __repr__(self) -> str:
        return (
            f"Topology(name={self.name!r}, hosts={self.n_hosts}, "
            f"switches={self.n_switches}, links={self.n_links})"
        )

    # --- construction -------------------------------------------------------------

    def add_switch(self) -> int:
        """Add a switch and return its node id (the next id after all existing nodes)."""
        node = self.n_nodes
        self._n_switches += 1
        self._node_links.append([])
        return node

    def add_switches(self, count: int) -> range:
        """Add ``count`` switches and return their node ids."""
        number = _as_int(count, "topology.switches")
        if number < 0:
            raise ScenarioError(
                "topology.switches", f"cannot add a negative number ({number}) of switches"
            )
        first = self.n_nodes
        for _ in range(number):
            self.add_switch()
        return range(first, self.n_nodes)

    def add_link(
        self,
        a: int,
        b: int,
        rate: int | str,
        delay: int | str,
        rate_back: int | str | None = None,
        delay_back: int | str | None = None,
    ) -> int:
        """Join nodes ``a`` and ``b`` with a full-duplex link and return its index.

        ``rate`` and ``delay`` apply to the direction ``a -> b``; ``rate_back`` and
        ``delay_back`` to ``b -> a`` and default to the forward values. Rates are bits
        per second and delays picoseconds when given as ints, or unit strings such as
        ``"100Gbps"`` and ``"1us"``. Parallel links are allowed; self-links are not.
        """
        index = self.n_links
        key = f"topology.links[{index}]"
        a = self._node(a, key)
        b = self._node(b, key)
        if a == b:
            raise ScenarioError(
                key, f"node {a} is linked to itself; a link joins two different nodes"
            )
        rate_ab = _rate(rate, f"{key}.rate")
        delay_ab = _delay(delay, f"{key}.delay")
        rate_ba = _rate(rate_back, f"{key}.rate_back", rate_ab)
        delay_ba = _delay(delay_back, f"{key}.delay_back", delay_ab)
        for column, value in zip(_LINK_COLUMNS, (a, b, rate_ab, rate_ba, delay_ab, delay_ba)):
            self._columns[column].append(value)
        self._arrays.clear()
        self._node_links[a].append(index)
        self._node_links[b].append(index)
        return index

    def _node(self, value: object, key: str) -> int:
        node = _as_int(value, key)
        if not 0 <= node < self.n_nodes:
            raise ScenarioError(key, f"unknown node {node}; {self._id_ranges()}")
        return node

    def _id_ranges(self) -> str:
        text = f"hosts are 0..{self.n_hosts - 1}"
        if self.n_switches:
            text += f", switches {self.n_hosts}..{self.n_nodes - 1}"
        return text

    # --- sizes and link columns ---------------------------------------------------

    @property
    def n_hosts(self) -> int:
        """Number of hosts (nodes ``0 .. n_hosts-1``)."""
        return self._n_hosts

    @property
    def n_switches(self) -> int:
        """Number of switches (nodes ``n_hosts .. n_nodes-1``)."""
        return self._n_switches

    @property
    def n_nodes(self) -> int:
        """Number of nodes, hosts and switches together."""
        return self._n_hosts + self._n_switches

    @property
    def n_links(self) -> int:
        """Number of full-duplex links."""
        return len(self._columns["link_a"])

    @property
    def hosts(self) -> range:
        """Host node ids."""
        return range(self.n_hosts)

    @property
    def switches(self) -> range:
        """Switch node ids."""
        return range(self.n_hosts, self.n_nodes)

    def _column(self, column: str) -> np.ndarray:
        array = self._arrays.get(column)
        if array is None:
            array = np.array(self._columns[column], dtype=np.int64)
            array.flags.writeable = False
            self._arrays[column] = array
        return array

    @property
    def link_a(self) -> np.ndarray:
        """First end of each link."""
        return self._column("link_a")

    @property
    def link_b(self) -> np.ndarray:
        """Second end of each link."""
        return self._column("link_b")

    @property
    def rate_ab(self) -> np.ndarray:
        """Rate of each link in the ``a -> b`` direction, bits per second."""
        return self._column("rate_ab")

    @property
    def rate_ba(self) -> np.ndarray:
        """Rate of each link in the ``b -> a`` direction, bits per second."""
        return self._column("rate_ba")

    @property
    def delay_ab(self) -> np.ndarray:
        """Propagation delay of each link in the ``a -> b`` direction, picoseconds."""
        return self._column("delay_ab")

    @property
    def delay_ba(self) -> np.ndarray:
        """Propagation delay of each link in the ``b -> a`` direction, picoseconds."""
        return self._column("delay_ba")

    # --- file id mapping ----------------------------------------------------------

    @property
    def original_ids(self) -> np.ndarray:
        """Node id in the source file of each node (identity unless renumbered on import)."""
        if self._original_ids is None:
            return np.arange(self.n_nodes, dtype=np.int64)
        return self._original_ids

    @property
    def file_id_to_node(self) -> np.ndarray:
        """Node of each source-file node id: the inverse of :attr:`original_ids`."""
        original = self.original_ids
        inverse = np.empty_like(original)
        inverse[original] = np.arange(original.size, dtype=np.int64)
        return inverse

    def _set_original_ids(self, original_ids: np.ndarray) -> None:
        ids = np.array(original_ids, dtype=np.int64)
        ids.flags.writeable = False
        self._original_ids = ids

    # --- queries ------------------------------------------------------------------

    def is_switch(self, node: int) -> bool:
        """Whether ``node`` is a switch (rather than a host)."""
        return self._node(node, "node") >= self.n_hosts

    def links_of(self, node: int) -> list[int]:
        """Indices of the links attached to ``node``, in the order they were added."""
        return list(self._node_links[self._node(node, "node")])

    def degree(self, node: int) -> int:
        """Number of links attached to ``node`` (parallel links counted separately)."""
        return len(self._node_links[self._node(node, "node")])

    def neighbors(self, node: int) -> list[int]:
        """The far end of each link of ``node``, in link order (repeats for parallel links)."""
        node = self._node(node, "node")
        a, b = self._columns["link_a"], self._columns["link_b"]
        return [b[link] if a[link] == node else a[link] for link in self._node_links[node]]

    def hop_distances(self, source: int) -> np.ndarray:
        """Number of links on a shortest path from ``source`` to every node (-1: unreachable)."""
        source = self._node(source, "source")
        distance = np.full(self.n_nodes, -1, dtype=np.int64)
        distance[source] = 0
        frontier = deque([source])
        while frontier:
            node = frontier.popleft()
            for peer in self.neighbors(node):
                if distance[peer] < 0:
                    distance[peer] = distance[node] + 1
                    frontier.append(peer)
        return distance

    def host_levels(self) -> np.ndarray:
        """Per node, the number of links to its nearest host (hosts 0, ToRs 1, aggregations
        or spines 2, cores 3; -1: no host reachable): the tiers of the fabric, counted from
        the hosts."""
        level = np.full(self.n_nodes, -1, dtype=np.int64)
        level[: self.n_hosts] = 0
        frontier = list(self.hosts)
        while frontier:
            nxt = []
            for node in frontier:
                for peer in self.neighbors(node):
                    if level[peer] < 0:
                        level[peer] = level[node] + 1
                        nxt.append(peer)
            frontier = nxt
        return level

    def island_of(self) -> np.ndarray:
        """Per node, the lowest host id it is connected to (-1: none); equal values share an island."""
        label = np.full(self.n_nodes, -1, dtype=np.int64)
        for host in self.hosts:
            if label[host] < 0:
                label[self.hop_distances(host) >= 0] = host
        return label

    def host_link(self, host: int) -> int:
        """Index of the single link of ``host``."""
        host = self._node(host, "host")
        if host >= self.n_hosts:
            raise ScenarioError("host", f"node {host} is a switch, not a host; {self._id_ranges()}")
        links = self._node_links[host]
        if len(links) != 1:
            raise ScenarioError("topology", self._host_degree_problem(host))
        return links[0]

    def host_rate(self, host: int) -> int:
        """Rate of ``host``'s link in the direction leaving the host, bits per second."""
        return self._leaving(host, "rate")

    def host_delay(self, host: int) -> int:
        """Propagation delay of ``host``'s link in the direction leaving the host, picoseconds."""
        return self._leaving(host, "delay")

    def _leaving(self, host: int, what: str) -> int:
        link = self.host_link(host)
        return self._columns[f"{what}_ab" if self._columns["link_a"][link] == host else f"{what}_ba"][link]

    def describe_node(self, node: int) -> str:
        """``"host 5"`` or ``"switch 320"``, plus the file's id when it was renumbered."""
        node = self._node(node, "node")
        text = f"{'switch' if node >= self.n_hosts else 'host'} {node}"
        original = int(self.original_ids[node])
        if original != node:
            text += f" (node {original} in the file)"
        return text

    def _host_degree_problem(self, host: int) -> str:
        count = len(self._node_links[host])
        return (
            f"{self.describe_node(host)} has {count} link{'' if count == 1 else 's'}; "
            "a host must have exactly one link"
        )

    def validate(self) -> None:
        """Check the topology can be simulated.

        Every host must have exactly one link (a NIC has one port) and every node must be
        reachable from host 0 (with :attr:`islands`, from some host). Raises
        :class:`ScenarioError` keyed ``topology``.
        """
        for host in self.hosts:
            if len(self._node_links[host]) != 1:
                raise ScenarioError("topology", self._host_degree_problem(host))
        unreachable = np.flatnonzero(self.island_of() < 0 if self.islands else self.hop_distances(0) < 0)
        if unreachable.size:
            node = int(unreachable[0])
            raise ScenarioError(
                "topology",
                f"{self.describe_node(node)} is not connected to host 0; "
                "link it to the rest of the network or remove it",
            )


def shape(kind: str, **params: int) -> tuple[int, int, int]:
    """``(hosts, switches, links)`` of a builder's topology, computed from its parameters
    without building it (``kind``: ``star``, ``dumbbell``, ``leaf_spine``, ``clos3``,
    ``fat_tree``, ``hpcc_320``; parameters as the builder names them, already checked)."""
    p = params
    if kind == "star":
        return p["hosts"], 1, p["hosts"]
    if kind == "dumbbell":
        hosts = p["hosts_left"] + p["hosts_right"]
        return hosts, 2, hosts + 1
    if kind == "leaf_spine":
        hosts = p["leaves"] * p["hosts_per_leaf"]
        return (hosts, p["leaves"] + p["spines"],
                hosts + p["leaves"] * p["spines"] * p.get("links_per_spine", 1))
    if kind == "clos3":
        pods = max(p["tors"] // p["tors_per_pod"], 1)
        hosts = p["tors"] * p["hosts_per_tor"]
        return (hosts, p["tors"] + pods * p["aggs_per_pod"] + p["cores"],
                hosts + p["tors"] * p["aggs_per_pod"] + pods * p["cores"])
    if kind == "fat_tree":
        k = p["k"]
        return k**3 // 4, 5 * k * k // 4, 3 * k**3 // 4
    if kind == "hpcc_320":
        return 320, 56, 320 + 20 * 4 + 5 * 16
    raise ValueError(f"no shape formula for topology kind {kind!r}")


# --- builders -----------------------------------------------------------------------


def _attach_hosts(
    topo: Topology, first_switch: int, hosts_per_switch: int, rate: int, delay: int
) -> None:
    """Link host ``h`` to switch ``first_switch + h // hosts_per_switch`` (host side first)."""
    for host in topo.hosts:
        topo.add_link(host, first_switch + host // hosts_per_switch, rate, delay)


def _finish(topo: Topology) -> Topology:
    topo.validate()
    return topo


def star(hosts: int, rate: int | str, delay: int | str) -> Topology:
    """Hosts ``0 .. hosts-1`` all linked to one switch, node ``hosts``.

    ``rate`` (bps or e.g. ``"100Gbps"``) and ``delay`` (ps or e.g. ``"1us"``) apply to
    every link.
    """
    n_hosts = _count(hosts, "topology.hosts")
    rate, delay = _rate(rate, "topology.rate"), _delay(delay, "topology.delay")
    topo = Topology(n_hosts, name=f"star({n_hosts})")
    switch = topo.add_switch()
    _attach_hosts(topo, switch, n_hosts, rate, delay)
    return _finish(topo)


def dumbbell(
    hosts_left: int,
    hosts_right: int,
    rate: int | str,
    delay: int | str,
    bottleneck_rate: int | str | None = None,
    bottleneck_delay: int | str | None = None,
) -> Topology:
    """Two switches joined by one bottleneck link, with hosts on either side.

    Numbering: left hosts ``0 .. L-1`` hang off switch A (node ``L+R``), right hosts
    ``L .. L+R-1`` off switch B (node ``L+R+1``). Host links use ``rate`` and ``delay``;
    the A-B link (the last link) uses ``bottleneck_rate`` and ``bottleneck_delay``, which
    default to the host values.
    """
    left = _count(hosts_left, "topology.hosts_left")
    right = _count(hosts_right, "topology.hosts_right")
    rate, delay = _rate(rate, "topology.rate"), _delay(delay, "topology.delay")
    neck_rate = _rate(bottleneck_rate, "topology.bottleneck_rate", rate)
    neck_delay = _delay(bottleneck_delay, "topology.bottleneck_delay", delay)
    topo = Topology(left + right, name=f"dumbbell({left},{right})")
    switch_a, switch_b = topo.add_switches(2)
    for host in topo.hosts:
        topo.add_link(host, switch_a if host < left else switch_b, rate, delay)
    topo.add_link(switch_a, switch_b, neck_rate, neck_delay)
    return _finish(topo)


def leaf_spine(
    leaves: int,
    spines: int,
    hosts_per_leaf: int,
    host_rate: int | str,
    host_delay: int | str,
    fabric_rate: int | str | None = None,
    fabric_delay: int | str | None = None,
    links_per_spine: int = 1,
) -> Topology:
    """A two-tier leaf-spine fabric.

    Numbering: hosts ``0 .. leaves*hosts_per_leaf-1``, then leaves, then spines. Host
    ``h`` hangs off leaf ``H + h // hosts_per_leaf`` (``H`` the number of hosts); every
    leaf has ``links_per_spine`` parallel links to every spine. Fabric rate and delay
    default to the host values. Links are added hosts first, then leaf by leaf.
    """
    n_leaves = _count(leaves, "topology.leaves")
    n_spines = _count(spines, "topology.spines")
    per_leaf = _count(hosts_per_leaf, "topology.hosts_per_leaf")
    parallel = _count(links_per_spine, "topology.links_per_spine")
    host_rate = _rate(host_rate, "topology.host_rate")
    host_delay = _delay(host_delay, "topology.host_delay")
    fabric_rate = _rate(fabric_rate, "topology.fabric_rate", host_rate)
    fabric_delay = _delay(fabric_delay, "topology.fabric_delay", host_delay)
    topo = Topology(n_leaves * per_leaf, name=f"leaf_spine({n_leaves}x{n_spines})")
    leaf_ids = topo.add_switches(n_leaves)
    spine_ids = topo.add_switches(n_spines)
    _attach_hosts(topo, leaf_ids[0], per_leaf, host_rate, host_delay)
    for leaf in leaf_ids:
        for spine in spine_ids:
            for _ in range(parallel):
                topo.add_link(leaf, spine, fabric_rate, fabric_delay)
    return _finish(topo)


def clos3(
    tors: int,
    aggs_per_pod: int,
    tors_per_pod: int,
    cores: int,
    hosts_per_tor: int,
    host_rate: int | str,
    host_delay: int | str,
    fabric_rate: int | str | None = None,
    fabric_delay: int | str | None = None,
) -> Topology:
    """A three-tier Clos: ToRs and Aggs grouped in pods, Cores on top.

    Parameters: ``tors`` ToR switches in total, grouped ``tors_per_pod`` to a pod (so
    ``tors / tors_per_pod`` pods; must divide); ``aggs_per_pod`` Agg switches per pod;
    ``cores`` Core switches in total, a multiple of ``aggs_per_pod``; ``hosts_per_tor``
    hosts under each ToR.

    Numbering: hosts ``0 .. H-1`` with ``H = tors * hosts_per_tor``; ToRs ``H ..
    H+tors-1``; Aggs pod by pod (Agg ``j`` of pod ``p`` is ``H + tors + p*aggs_per_pod +
    j``); then Cores. Host ``h`` hangs off ToR ``H + h // hosts_per_tor``; ToR ``t`` is in
    pod ``t // tors_per_pod`` and links to every Agg of its pod; Agg ``j`` of every pod
    links to Cores ``j*c .. j*c+c-1`` with ``c = cores / aggs_per_pod``, so each Core
    reaches one Agg in every pod.

    Links are added hosts first, then ToR-Agg ordered by ToR, then Agg-Core ordered by
    Agg, each from the lower tier to the upper. Fabric rate and delay default to the host
    values.
    """
    n_tors = _count(tors, "topology.tors")
    per_pod_aggs = _count(aggs_per_pod, "topology.aggs_per_pod")
    per_pod_tors = _count(tors_per_pod, "topology.tors_per_pod")
    n_cores = _count(cores, "topology.cores")
    per_tor = _count(hosts_per_tor, "topology.hosts_per_tor")
    if n_tors % per_pod_tors:
        raise ScenarioError(
            "topology.tors_per_pod",
            f"{per_pod_tors} does not divide tors={n_tors}; "
            "every pod needs the same number of ToRs",
        )
    if n_cores % per_pod_aggs:
        raise ScenarioError(
            "topology.cores",
            f"{n_cores} is not a multiple of aggs_per_pod={per_pod_aggs}; "
            "each Agg position needs the same number of Cores",
        )
    host_rate = _rate(host_rate, "topology.host_rate")
    host_delay = _delay(host_delay, "topology.host_delay")
    fabric_rate = _rate(fabric_rate, "topology.fabric_rate", host_rate)
    fabric_delay = _delay(fabric_delay, "topology.fabric_delay", host_delay)
    pods = n_tors // per_pod_tors
    cores_per_agg = n_cores // per_pod_aggs

    topo = Topology(n_tors * per_tor, name=f"clos3({n_tors} ToRs, {pods} pods, {n_cores} cores)")
    tor_ids = topo.add_switches(n_tors)
    agg_ids = topo.add_switches(pods * per_pod_aggs)
    core_ids = topo.add_switches(n_cores)
    _attach_hosts(topo, tor_ids[0], per_tor, host_rate, host_delay)
    for t, tor in enumerate(tor_ids):
        pod = t // per_pod_tors
        for agg in agg_ids[pod * per_pod_aggs : (pod + 1) * per_pod_aggs]:
            topo.add_link(tor, agg, fabric_rate, fabric_delay)
    for a, agg in enumerate(agg_ids):
        j = a % per_pod_aggs
        for core in core_ids[j * cores_per_agg : (j + 1) * cores_per_agg]:
            topo.add_link(agg, core, fabric_rate, fabric_delay)
    return _finish(topo)


def fat_tree(
    k: int,
    host_rate: int | str,
    host_delay: int | str,
    fabric_rate: int | str | None = None,
    fabric_delay: int | str | None = None,
) -> Topology:
    """The standard k-ary three-tier fat tree (``k`` even).

    ``k**3/4`` hosts; ``k`` pods, each of ``k/2`` edge and ``k/2`` aggregation switches;
    ``(k/2)**2`` core switches; every switch has ``k`` links. Numbering: hosts first, then
    edges (pod by pod), then aggregations (pod by pod), then cores. Host ``h`` hangs off
    edge ``h // (k/2)``; aggregation ``j`` of each pod links to cores ``j*(k/2) ..
    j*(k/2)+k/2-1``. This is :func:`clos3` with ``k/2`` ToRs and Aggs per pod.
    """
    size = _as_int(k, "topology.k")
    if size < 2 or size % 2:
        raise ScenarioError("topology.k", f"fat-tree k must be an even number >= 2, got {size}")
    half = size // 2
    topo = clos3(
        tors=size * half,
        aggs_per_pod=half,
        tors_per_pod=half,
        cores=half * half,
        hosts_per_tor=half,
        host_rate=host_rate,
        host_delay=host_delay,
        fabric_rate=fabric_rate,
        fabric_delay=fabric_delay,
    )
    topo.name = f"fat_tree(k={size})"
    return topo


def hpcc_320() -> Topology:
    """The HPCC paper's 320-host three-tier Clos, node for node.

    Hosts 0-319, ToRs 320-339 (16 hosts each), Aggs 340-359, Cores 360-375; 5 pods of
    4 ToRs and 4 Aggs; the j-th Agg of each pod links to Cores 360+4j .. 363+4j. Host
    links 100 Gbps, fabric links 400 Gbps, 1 us delay everywhere.
    """
    topo = clos3(
        tors=20,
        aggs_per_pod=4,
        tors_per_pod=4,
        cores=16,
        hosts_per_tor=16,
        host_rate="100Gbps",
        host_delay="1us",
        fabric_rate="400Gbps",
        fabric_delay="1us",
    )
    topo.name = "hpcc_320"
    return topo


# --- HPCC ns-3 topology files -------------------------------------------------------

_HEADER_LAYOUT = "nodes switches links"
_LINK_LAYOUT = "a b rate delay error_rate"


def from_hpcc_file(path: str | os.PathLike[str]) -> Topology:
    """Read a topology in the HPCC ns-3 format.

    Line 1 is ``nodes switches links``, line 2 the switch ids, then one link per line:
    ``a b rate delay error_rate`` (e.g. ``0 1 100Gbps 1000ns 0``). Nodes not listed as
    switches are hosts. When the file does not number hosts first, hosts are renumbered
    ``0 .. H-1`` in increasing file id and switches follow in increasing file id;
    :attr:`Topology.original_ids` and :attr:`Topology.file_id_to_node` record the
    mapping. Blank lines and ``#`` comments are ignored. Links must have error rate 0
    (rocesim does not drop packets at random). Problems raise :class:`ScenarioError`
    keyed ``file:line``.
    """
    name = os.fspath(path)
    lines = read_lines(name)
    if not lines:
        raise ScenarioError(name, f"file is empty; line 1 must be '{_HEADER_LAYOUT}'")
    header = lines[0]
    header.expect_fields(3, _HEADER_LAYOUT)
    n_nodes, n_switches, n_links = (
        header.int_field(i, field) for i, field in enumerate(_HEADER_LAYOUT.split())
    )
    if n_switches < 0 or n_links < 0 or n_nodes <= n_switches:
        raise header.error(
            f"nodes={n_nodes}, switches={n_switches}, links={n_links}: counts must not be "
            "negative and there must be more nodes than switches (at least one host)"
        )

    switch_ids: list[int] = []
    if n_switches:
        if len(lines) < 2:
            raise end_of_file_error(name, lines, f"line 2 must list the {n_switches} switch ids")
        switch_ids = _read_switch_ids(lines[1], n_nodes, n_switches)
    body = declared_records(name, lines, 2 if n_switches else 1, n_links, "links")
    if n_nodes - n_switches > max(n_links, 10_000):
        # refused before building: a short file could otherwise declare 10**12 hosts
        # (small counts fall through to validate(), which names the first bare host)
        raise header.error(
            f"nodes={n_nodes}, switches={n_switches}, links={n_links}: each of the "
            f"{n_nodes - n_switches} hosts needs a link, but only {n_links} links are declared"
        )

    switch_set = set(switch_ids)
    order = [node for node in range(n_nodes) if node not in switch_set] + sorted(switch_set)
    file_to_node = np.empty(n_nodes, dtype=np.int64)
    file_to_node[order] = np.arange(n_nodes)

    topo = Topology(n_nodes - n_switches, name=Path(name).stem)
    topo.add_switches(n_switches)
    if order != list(range(n_nodes)):
        topo._set_original_ids(np.array(order))
    for line in body:
        a, b, rate, delay = _read_link(line, n_nodes)
        try:
            topo.add_link(int(file_to_node[a]), int(file_to_node[b]), rate, delay)
        except ScenarioError as exc:
            raise line.error(exc.reason) from None
    try:
        topo.validate()
    except ScenarioError as exc:
        raise ScenarioError(name, exc.reason) from None
    return topo


def _read_switch_ids(line: Line, n_nodes: int, n_switches: int) -> list[int]:
    if len(line.fields) != n_switches:
        raise line.error(
            f"line 1 declares {n_switches} switches but this line lists {len(line.fields)} ids"
        )
    ids = [line.int_field(i, "switch id") for i in range(n_switches)]
    seen: set[int] = set()
    for node in ids:
        if not 0 <= node < n_nodes:
            raise line.error(
                f"switch id {node} is not a node; line 1 declares nodes 0..{n_nodes - 1}"
            )
        if node in seen:
            raise line.error(f"switch id {node} is listed twice")
        seen.add(node)
    return ids


def _read_link(line: Line, n_nodes: int) -> tuple[int, int, int, int]:
    """Parse one link line into file node ids, rate (bps) and delay (ps)."""
    line.expect_fields(5, _LINK_LAYOUT)
    ends = (line.int_field(0, "a"), line.int_field(1, "b"))
    for node in ends:
        if not 0 <= node < n_nodes:
            raise line.error(f"unknown node {node}; line 1 declares nodes 0..{n_nodes - 1}")
    rate = parse_rate(line.fields[2], line.where)
    delay = parse_time(line.fields[3], line.where)
    error_rate = line.float_field(4, "error_rate")
    if error_rate != 0:
        raise line.error(
            f"error rate {line.fields[4]} is not supported; rocesim links do not drop "
            "packets at random, use 0"
        )
    return ends[0], ends[1], rate, delay


def _hpcc_delay(ps: int) -> str:
    return f"{ps // 1000}ns" if ps % 1000 == 0 else f"{ps}ps"


def to_hpcc_file(topology: Topology, path: str | os.PathLike[str]) -> None:
    """Write ``topology`` in the HPCC ns-3 format read by :func:`from_hpcc_file`.

    Node ids are rocesim's (hosts first), not those of any file the topology was read
    from. Rates are written like ``100Gbps`` and delays in ns (``1000ns``), or ps when
    not a whole number of ns. The format has one rate and delay per link, so links with
    different values per direction raise :class:`ScenarioError`.
    """
    rows = zip(
        topology.link_a,
        topology.link_b,
        topology.rate_ab,
        topology.rate_ba,
        topology.delay_ab,
        topology.delay_ba,
    )
    out = [
        f"{topology.n_nodes} {topology.n_switches} {topology.n_links}",
        " ".join(str(node) for node in topology.switches),
    ]
    for index, (a, b, rate_ab, rate_ba, delay_ab, delay_ba) in enumerate(rows):
        if rate_ab != rate_ba or delay_ab != delay_ba:
            raise ScenarioError(
                f"topology.links[{index}]",
                f"link {a}-{b} has different rates or delays per direction; the HPCC format "
                "holds one rate and one delay per link",
            )
        out.append(f"{a} {b} {format_rate(int(rate_ab))} {_hpcc_delay(int(delay_ab))} 0")
    Path(path).write_text("\n".join(out) + "\n", encoding="utf-8")
