"""Training platforms: servers of several GPUs with a scale-up domain, NICs on a RoCE fabric.

A :class:`Platform` puts ranks (GPUs) on a :class:`~rocesim.network.topology.Topology` whose hosts
are NICs. A server has ``G`` GPUs and ``N`` NICs (``N`` divides ``G``; GPU ``g`` of a server
uses its NIC ``g * N // G``); ranks are numbered server-major (rank ``s*G + g`` is GPU ``g``
of server ``s``) and so are NICs (host ``s*N + n``). NIC ``n`` of every server is on rail
``n``.

The scale-up domain (NVLink/NVSwitch) joins the GPUs of a server. It is lossless and
needs no RoCE congestion control, so it is not simulated packet by packet: a transfer
inside a server is a fluid transfer that becomes two compute-like nodes of the dependency
graph (the sender's port busy for ``bytes / rate``, then the latency), see
:meth:`ScaleUp.port_time_ps`. Transfers issued by one step of a collective share a
GPU's port fairly (all-to-all: a GPU sending to 7 peers at once takes 7 times as long),
and a GPU's later sends of the same collective queue behind its earlier ones in the
order the collective issues them, step by step: pipelined chunks never share the port
beyond its rate, at the price of the overlap between consecutive steps of one ring (an
upper bound on the time when chunks pipeline across steps);
transfers of different collectives that overlap in time do not see each other. This
keeps the scale-up domain from ever dominating the event count (DESIGN.md, Platforms);
its error against the packet model in an idle server is measured in
tests/network/test_platform.py (the packet model adds RoCE headers and ACKs: 5-11% slower).

Scale-up kinds: ``switch`` (NVSwitch: any-to-any, each GPU sends and receives at
``rate``), ``mesh`` (a point-to-point link per pair, ``rate / (G-1)`` each, as AMD
Infinity Fabric) and ``ring`` (two links per GPU, ``rate / 2`` each, a transfer to a GPU
``k`` steps away crosses ``k`` links).

Fabric builders: :func:`rail_optimized` (one leaf per rail per pod, spines above; NVIDIA
DGX SuperPOD-like) and :func:`rail_only` (one switch per rail, no spine: Wang et al.,
"Rail-only: a low-cost high-performance network for training LLMs with trillion
parameters", 2023); :func:`on_topology` puts multi-NIC servers on any other topology
(``leaf_spine``, ``fat_tree``, ``clos3``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from rocesim.network import topology as topo_mod
from rocesim.errors import ScenarioError
from rocesim.units import format_rate, format_time, parse_rate, parse_time

__all__ = ["ScaleUp", "Platform", "rail_optimized", "rail_only", "on_topology", "SCALE_UP_KINDS"]

SCALE_UP_KINDS = ("switch", "mesh", "ring")


@dataclass(frozen=True)
class ScaleUp:
    """The scale-up domain of a server: each GPU's rate per direction and the latency of one hop."""

    rate_bps: int
    delay_ps: int
    kind: str = "switch"
    nvls: bool = False          # the switch reduces and multicasts (NVLink SHARP, NVSwitch gen 3+)

    def __post_init__(self):
        if self.kind not in SCALE_UP_KINDS:
            raise ScenarioError("scale_up.kind", f"unknown {self.kind!r}; valid: {', '.join(SCALE_UP_KINDS)}")
        if self.rate_bps <= 0:
            raise ScenarioError("scale_up.rate", "must be positive")
        if self.delay_ps < 0:
            raise ScenarioError("scale_up.delay", "must not be negative")
        if self.nvls and self.kind != "switch":
            raise ScenarioError("scale_up.nvls", f"NVLink SHARP needs a switch, not a {self.kind}")

    def hops(self, a: np.ndarray, b: np.ndarray, gpus: int) -> np.ndarray:
        """Links crossed from local GPU ``a`` to local GPU ``b`` (1, or the ring distance)."""
        if self.kind != "ring":
            return np.ones(np.shape(a), np.int64)
        d = np.abs(np.asarray(a) - np.asarray(b))
        return np.minimum(d, gpus - d).astype(np.int64)

    def _load(self, a, b, weights, gpus):
        """Per transfer ``a[k] -> b[k]``: the sum of ``weights`` over the transfers sharing its
        resource, and that resource's rate (``switch``: the sender's or the receiver's port,
        whichever carries more; ``mesh``: the pair's link, ``rate/(G-1)``; ``ring``: the
        pair's path, ``rate/2``)."""
        if self.kind == "switch":
            _, inv_a = np.unique(a, return_inverse=True)
            _, inv_b = np.unique(b, return_inverse=True)
            load = np.maximum(np.bincount(inv_a, weights=weights)[inv_a], np.bincount(inv_b, weights=weights)[inv_b])
            return load, self._resource_bps(gpus)
        _, inv = np.unique(a * (1 << 32) + b, return_inverse=True)
        return np.bincount(inv, weights=weights)[inv], self._resource_bps(gpus)

    def _resource_bps(self, gpus) -> float:
        """The rate of the resource a transfer uses (see `_load`)."""
        if self.kind == "switch":
            return float(self.rate_bps)
        return self.rate_bps / (max(gpus - 1, 1) if self.kind == "mesh" else 2)

    def port_time_ps(self, a: np.ndarray, b: np.ndarray, nbytes: np.ndarray, gpus: int) -> np.ndarray:
        """How long each of the transfers ``a[k] -> b[k]`` (ranks, issued together) holds its
        port: the fluid share of the GPU's rate (``switch``: the larger of what its sender
        sends and its receiver receives in this step, over ``rate``; ``mesh``: per pair over
        ``rate/(G-1)``; ``ring``: per pair over ``rate/2``)."""
        a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
        nbytes = np.asarray(nbytes, np.int64)
        if not a.size:
            return np.zeros(0, np.int64)
        load, rate = self._load(a, b, nbytes, gpus)
        return np.ceil(load * 8e12 / rate).astype(np.int64)

    def share_bps(self, a: np.ndarray, b: np.ndarray, gpus: int) -> np.ndarray:
        """The rate each of the standing transfers ``a[k] -> b[k]`` (ranks; e.g. one per NCCL
        channel) gets when they share their resources equally all along (see `_load`)."""
        a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
        if not a.size:
            return np.zeros(0)
        users, rate = self._load(a, b, np.ones(a.size), gpus)
        return rate / users

    def neighbour_bps(self, gpus: int) -> float:
        """What one GPU sends per second to a neighbour (local GPU 0 to 1) when nothing else
        uses its resources: a ring's per-step rate over the scale-up domain."""
        return self._resource_bps(gpus)                 # alone on its resource

    def describe(self) -> str:
        return (f"{self.kind}{' with NVLink SHARP' if self.nvls else ''}, {format_rate(self.rate_bps)} per GPU, "
                f"{format_time(self.delay_ps)} per hop")


@dataclass
class Platform:
    """Ranks (GPUs) on servers with a scale-up domain and NICs (the topology's hosts)."""

    topology: topo_mod.Topology
    servers: int
    gpus_per_server: int = 1
    nics_per_server: int = 1
    scale_up: ScaleUp | None = None
    kind: str = "hosts"                  # which builder made it
    rail_only: bool = False              # rails are separate networks: cross-rail traffic forwards
    pods: int = 1
    uplink_share: float = 1.0            # of a NIC's rate its leaf can send to the spines (1/oversubscription, <= 1)
    notes: dict = field(default_factory=dict)

    def __post_init__(self):
        G, N = self.gpus_per_server, self.nics_per_server
        if N > G or G % N:
            raise ScenarioError("topology.nics_per_server",
                                f"{N} NICs cannot be shared evenly by {G} GPUs; use a divisor of gpus_per_server")
        if self.servers * N != self.topology.n_hosts:
            raise ScenarioError("topology.nics_per_server",
                                f"{self.topology.n_hosts} NICs (hosts) do not make servers of {N} NICs each")
        if G > 1 and self.scale_up is None:
            raise ScenarioError("topology.scale_up", f"servers of {G} GPUs need a scale-up domain {{rate, delay}}")
        r = np.arange(self.n_ranks)
        self.server = r // G
        self.local = r % G
        self.rail = self.local * N // G
        self.host = self.server * N + self.rail

    @classmethod
    def hosts(cls, topology) -> "Platform":
        """The plain platform: every host is a server of one GPU and one NIC (rank = host)."""
        return cls(topology, topology.n_hosts)

    @property
    def n_ranks(self) -> int:
        """Number of GPUs (ranks)."""
        return self.servers * self.gpus_per_server

    @property
    def n_rails(self) -> int:
        return self.nics_per_server

    def host_of(self, ranks) -> np.ndarray:
        """The NIC host of each rank."""
        return self.host[np.asarray(ranks, np.int64)]

    def relay(self, src, dst, pxn: bool) -> np.ndarray:
        """The rank that forwards ``src -> dst`` over its NIC after a scale-up hop, or -1.

        Rail-aligned forwarding (NCCL's PXN): a GPU sends to a GPU of another server
        through the GPU of its own server that sits on the destination's rail, so the data
        crosses the scale-up domain first and then stays on one rail. It applies when
        ``pxn`` is set, and always on a ``rail_only`` fabric (rails are not connected)."""
        src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
        out = np.full(src.shape, -1, np.int64)
        if not (pxn or self.rail_only) or self.gpus_per_server == 1:
            return out
        cross = (self.server[src] != self.server[dst]) & (self.rail[src] != self.rail[dst])
        out[cross] = self.server[src[cross]] * self.gpus_per_server + self.local[dst[cross]]
        return out

    def bisection_bps(self) -> int:
        """Half of the narrowest tier-to-tier capacity (switches layered by hop distance from
        the hosts, `Topology.host_levels`): what half of the NICs can send to the other half at most."""
        t = self.topology
        level = t.host_levels()
        la, lb = level[t.link_a], level[t.link_b]
        lo = np.minimum(la, lb)
        up = la != lb
        cap = np.bincount(lo[up], weights=np.minimum(t.rate_ab, t.rate_ba)[up].astype(float))
        cap = cap[cap > 0]
        return int(cap.min() // 2) if cap.size else 0

    def describe(self) -> str:
        """What `rocesim check` prints: servers, GPUs, NICs, rails, switches, bisection."""
        t = self.topology
        nic_rate = int(t.host_rate(0))
        lines = [f"platform {self.kind}: {self.servers} servers x {self.gpus_per_server} GPUs = {self.n_ranks} "
                 f"ranks; {t.n_hosts} NICs ({self.nics_per_server} per server, {format_rate(nic_rate)})",
                 f"  rails: {self.n_rails}" + (" (separate networks: cross-rail traffic forwards over the "
                                                "scale-up domain)" if self.rail_only else ""),
                 f"  switches: {t.n_switches}" + "".join(f", {k} {v}" for k, v in self.notes.items()),
                 f"  bisection: " + (f"{format_rate(self.bisection_bps() // self.n_rails)} per rail"
                                     if self.rail_only else format_rate(self.bisection_bps()))]
        if self.scale_up is not None:
            lines.append(f"  scale-up: {self.scale_up.describe()}")
        return "\n".join(lines)


def _count(v, key) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ScenarioError(key, f"expected a positive integer, got {v!r}")
    return int(v)


def _nics(gpus, nics) -> tuple[int, int]:
    G = _count(gpus, "gpus_per_server")
    N = G if nics is None else _count(nics, "nics_per_server")
    return G, N


def rail_optimized(servers, gpus_per_server, nic_rate, nic_delay, scale_up, *, nics_per_server=None,
                   servers_per_pod=None, spines=None, oversubscription=1.0, fabric_rate=None,
                   fabric_delay=None, pods_per_block=None, cores=None) -> Platform:
    """A rail-optimized fabric: in each pod of ``servers_per_pod`` servers, NIC ``n`` of every
    server links to the pod's leaf of rail ``n``; every leaf links to every spine (two tiers).

    Three tiers with ``pods_per_block``: the pods form blocks of that many, each block has
    its own ``spines`` spines joined to every leaf of the block, and ``cores`` core switches
    in one plane per spine index (``cores / spines`` each; default: as many as a spine has
    leaves below it, 1:1) join spine ``j`` of every block to every core of plane ``j``.

    Numbering: NIC hosts server-major, then leaves (pod by pod, rail by rail), then spines
    (block by block), then cores (plane by plane).  ``spines`` defaults to what gives each
    leaf ``oversubscription`` : 1 of down- to uplink capacity (one link per spine). Fabric
    rate and delay default to the NIC's.
    """
    S = _count(servers, "servers")
    G, N = _nics(gpus_per_server, nics_per_server)
    per_pod = S if servers_per_pod is None else _count(servers_per_pod, "servers_per_pod")
    if S % per_pod:
        raise ScenarioError("servers_per_pod", f"{per_pod} does not divide servers={S}")
    nic_rate, nic_delay = parse_rate(nic_rate, "nic_link.rate", bare_ok=True), parse_time(nic_delay, "nic_link.delay", bare_ok=True)
    fabric_rate = nic_rate if fabric_rate is None else parse_rate(fabric_rate, "fabric_link.rate", bare_ok=True)
    fabric_delay = nic_delay if fabric_delay is None else parse_time(fabric_delay, "fabric_link.delay", bare_ok=True)
    if isinstance(oversubscription, bool) or not isinstance(oversubscription, (int, float)) or oversubscription <= 0:
        raise ScenarioError("oversubscription", f"expected a positive ratio (2 for 2:1), got {oversubscription!r}")
    if spines is None:
        spines = max(1, math.ceil(per_pod * nic_rate / (oversubscription * fabric_rate) - 1e-9))
    n_spines = _count(spines, "spines")
    pods = S // per_pod
    per_block = pods if pods_per_block is None else _count(pods_per_block, "pods_per_block")
    if pods % per_block:
        raise ScenarioError("pods_per_block", f"{per_block} does not divide the {pods} pods")
    blocks = pods // per_block
    if cores is not None and pods_per_block is None:
        raise ScenarioError("cores", "a core tier needs pods_per_block (the pods under one set of spines)")
    per_plane = per_block * N if cores is None else _count(cores, "cores") // n_spines
    if cores is not None and cores % n_spines:
        raise ScenarioError("cores", f"{cores} cores do not make one plane of equal size per spine ({n_spines})")
    tiers = 3 if pods_per_block is not None else 2
    name = f"{pods} pods, {n_spines} spines" + (f" per block of {per_block} pods, {n_spines * per_plane} cores"
                                                 if tiers == 3 else "")
    topo = topo_mod.Topology(S * N, name=f"rail_optimized({S}x{G}, {name})")
    leaves = np.asarray(topo.add_switches(pods * N))
    spine_ids = np.asarray(topo.add_switches(n_spines * (blocks if tiers == 3 else 1))).reshape(-1, n_spines)
    for host in range(S * N):
        s, n = divmod(host, N)
        topo.add_link(host, int(leaves[(s // per_pod) * N + n]), nic_rate, nic_delay)
    for i, leaf in enumerate(leaves):
        for spine in spine_ids[i // (per_block * N) if tiers == 3 else 0]:
            topo.add_link(int(leaf), int(spine), fabric_rate, fabric_delay)
    if tiers == 3:
        core_ids = np.asarray(topo.add_switches(n_spines * per_plane)).reshape(n_spines, per_plane)
        for block in spine_ids:
            for j, spine in enumerate(block):
                for core in core_ids[j]:
                    topo.add_link(int(spine), int(core), fabric_rate, fabric_delay)
    topo.validate()
    ratio = per_pod * nic_rate / (n_spines * fabric_rate)
    notes = {"leaves": len(leaves), "spines": spine_ids.size, "pods": pods, "oversubscription": f"{ratio:g}:1"}
    if tiers == 3:
        notes.update(blocks=blocks, cores=n_spines * per_plane,
                     core_oversubscription=f"{per_block * N / per_plane:g}:1")
    return Platform(topo, S, G, N, scale_up, "rail_optimized", pods=pods, uplink_share=min(1.0, 1 / ratio),
                    notes=notes)


def rail_only(servers, gpus_per_server, nic_rate, nic_delay, scale_up, *, nics_per_server=None) -> Platform:
    """One switch per rail joining NIC ``n`` of every server, and no spine: traffic between
    GPUs on different rails of different servers crosses the scale-up domain first."""
    S = _count(servers, "servers")
    G, N = _nics(gpus_per_server, nics_per_server)
    nic_rate, nic_delay = parse_rate(nic_rate, "nic_link.rate", bare_ok=True), parse_time(nic_delay, "nic_link.delay", bare_ok=True)
    topo = topo_mod.Topology(S * N, name=f"rail_only({S}x{G})")
    rails = topo.add_switches(N)
    for host in range(S * N):
        topo.add_link(host, rails[host % N], nic_rate, nic_delay)
    topo.islands = N > 1
    topo.validate()
    return Platform(topo, S, G, N, scale_up, "rail_only", rail_only=N > 1, notes={"rail switches": N})


def on_topology(topology, gpus_per_server, scale_up, *, nics_per_server=None, kind=None) -> Platform:
    """Servers of ``gpus_per_server`` GPUs and ``nics_per_server`` NICs (default: one per GPU)
    on an existing topology: server ``s`` owns hosts ``s*N .. s*N+N-1``."""
    G, N = _nics(gpus_per_server, nics_per_server)
    H = topology.n_hosts
    if H % N:
        raise ScenarioError("nics_per_server", f"the {H} hosts do not split into servers of {N} NICs")
    return Platform(topology, H // N, G, N, scale_up, kind or topology.name)
