"""The memory model and guards: a topology and its traffic are refused before anything big
is built when their estimated memory (`memory_estimate`) exceeds a limit (by default 75%
of the machine's memory; `limits.memory` in YAML, `memory_limit` in `Simulation`).  The same
guard (`MemoryLimit`) serves the YAML loader and the Python API; workload generators report
to a `WorkloadGuard` over it, which checks their whole run once its first iteration is built
and projects it as they go."""
from __future__ import annotations

import os
from typing import Callable

from rocesim.errors import ScenarioError
from rocesim.units import parse_size


# --- the memory model ----------------------------------------------------------------

# Bytes the current implementation holds, per item (measured with getrusage on fat trees
# k=16/24 and stars of 3000/6000 hosts, then rounded up):
MEMORY_PER_NODE = 256
"""Topology lists, the core's Host/Switch structs, per-node arrays."""
MEMORY_PER_PORT = 1024
"""The core's Port struct (about 560 B), per-port numpy arrays and result counters."""
MEMORY_PER_ROUTE_CELL = 32
"""Per (switch port, host) pair: routing.build_routes compares dense int32 hop-distance
matrices [switch ports x hosts] and keeps boolean masks and the ECMP entries (18-30 B
measured)."""
MEMORY_PER_NODE_HOST = 4
"""Per (node, host) pair: the int32 hop-distance matrix of routing._host_distances."""
MEMORY_PER_SWITCH_HOST = 16
"""Per (switch, host) pair: route_off/route_cnt (int32) in Python and in the core."""
MEMORY_PER_FLOW = 352
"""Per flow or compute step, at the worst: the core's 64-byte record, the Python flow columns
and the result arrays, and a queue pair and a packet if every flow is in flight at once
(a 1024-rank all-to-all of one-packet flows without congestion control: 1 M flows, 386 MB
peak, 45 MB of it before any flow)."""

MEMORY_PER_SAMPLE = 1024
"""Per sample of `output.sample_interval` (`rocesim.results.sampling`), whatever it holds: the
numpy arrays and tuples of one sample of rates and queues (about 950 B measured with
tracemalloc on a star of 9 hosts)."""
MEMORY_PER_QUEUE_SAMPLE = 40
"""Per sampled queue and sample: its time, port and bytes (20 B), kept, then copied into the
table of queues."""

DEFAULT_MEMORY_LIMIT_FALLBACK = 16 * 10**9
"""The memory limit when the machine's physical memory cannot be read."""


def memory_estimate(n_hosts: int, n_switches: int, n_links: int, n_flows: int = 0) -> int:
    """Bytes a simulation of this size needs, estimated before anything is built.

    With ``H`` hosts, ``S`` switches, ``L`` links (``P = 2 L`` ports, of which
    ``P - H`` are switch ports, since every host has one link) and ``F`` flows::

        256 (H + S) + 1024 P + 32 (P - H) H + 4 (H + S) H + 16 S H + 640 F

    The ``(P - H) H`` term dominates for large fabrics: routing tables are built from
    dense [switch port x host] arrays. The figure is an upper-end estimate of the peak
    (exact for fat trees to about 10%, twice the peak for a star).
    """
    hosts, switches, links, flows = (max(int(n), 0) for n in (n_hosts, n_switches, n_links, n_flows))
    ports = 2 * links
    switch_ports = max(ports - hosts, 0)
    nodes = hosts + switches
    return (
        MEMORY_PER_NODE * nodes
        + MEMORY_PER_PORT * ports
        + MEMORY_PER_ROUTE_CELL * switch_ports * hosts
        + MEMORY_PER_NODE_HOST * nodes * hosts
        + MEMORY_PER_SWITCH_HOST * switches * hosts
        + MEMORY_PER_FLOW * flows
    )


def sample_memory(samples: int, queues: int) -> int:
    """Bytes `samples` samples of `queues` queues hold at least (rates aside: the flows
    active at each sample are not known before the run)."""
    return int(samples) * (MEMORY_PER_SAMPLE + MEMORY_PER_QUEUE_SAMPLE * int(queues))


def default_memory_limit() -> int:
    """75% of the machine's physical memory (``os.sysconf``), or 16 GB if unknown."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return DEFAULT_MEMORY_LIMIT_FALLBACK
    if not isinstance(total, int) or total <= 0:
        return DEFAULT_MEMORY_LIMIT_FALLBACK
    return total * 3 // 4


def approx_bytes(n: int) -> str:
    """A byte count for messages, to about two significant figures: ``"3.1 TB"``."""
    value = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB", "PB", "EB"):
        if value < 1000 or unit == "EB":
            break
        value /= 1000
    if unit == "B":
        return f"{int(value)} B"
    return f"{value:.1f} {unit}" if value < 100 else f"{value:.0f} {unit}"



# --- the guard -------------------------------------------------------------------------

class MemoryLimit:
    """Refuses, before anything big is built, a topology and traffic whose estimated
    memory (`memory_estimate`) exceeds `limit` bytes."""

    def __init__(self, limit: int | None = None, configured: bool = False, setting: str = "limits.memory: {}"):
        self.limit = default_memory_limit() if limit is None else limit
        self.configured = configured
        self.setting = setting           # how the user raises it, "{}" the size
        self.shape = (0, 0, 0)

    @classmethod
    def of(cls, limit, setting: str = "limits.memory: {}", key: str = "limits.memory") -> "MemoryLimit":
        """The limit as configured: `limit` a size ("32GB", or bytes), None for the default (75%
        of the machine's), or a MemoryLimit, kept as it is (a scenario's own, shared by the
        topology and the traffic); `setting` says how a user raises it ("{}": the size)."""
        if isinstance(limit, cls):
            return limit
        if limit is None:
            return cls(setting=setting)
        size = parse_size(limit, key, bare_ok=True)
        if size <= 0:
            raise ScenarioError(key, f"must be positive, got {limit!r}")
        return cls(size, configured=True, setting=setting)

    def _over(self, need) -> str:
        where = "" if self.configured else " (75% of this machine's memory)"
        text = (f"needs about {approx_bytes(need)}; the limit is "
                f"{approx_bytes(self.limit)}{where}")
        physical = default_memory_limit() * 4 // 3
        if need > physical:
            return text + f", and this machine has {approx_bytes(physical)}"
        return text + f" (set `{self.setting.format(_raise_to(need))}` to raise it)"

    def topology(self, key, what, hosts, switches, links):
        """Check a topology of this size, from its parameters, before it is built."""
        need = memory_estimate(hosts, switches, links)
        if need > self.limit:
            plural = "" if switches == 1 else "es"
            raise ScenarioError(key, f"{what} ({hosts:,} hosts, {switches:,} switch{plural}) {self._over(need)}")
        self.shape = (hosts, switches, links)

    def holds(self, key, what, need):
        """Refuse `what`, which needs `need` bytes in all (the caller counts everything)."""
        if need > self.limit:
            raise ScenarioError(key, f"{what} {self._over(need)}")

    def flows(self, key, what, existing, more):
        """Check that `more` flows on top of `existing` fit with the topology."""
        need = memory_estimate(*self.shape, existing + more)
        if need > self.limit:
            raise ScenarioError(key, f"{what}: about {int(more):,} flows on {self.shape[0]:,} hosts "
                                     f"{self._over(need)}")


class WorkloadEstimated(Exception):
    """Raised by `WorkloadGuard.progress` when only an estimate of a workload's size was
    asked for (`rocesim check`): `nodes` is its projected node count; a generator may set
    `empty` to the collectives it declares that move nothing
    (`rocesim.training.graph.EmptyCollectives`), known before it builds."""

    def __init__(self, nodes: int):
        super().__init__(nodes)
        self.nodes = int(nodes)
        self.empty = None


class WorkloadGuard:
    """What a workload generator reports to while it builds its graph (`Simulation.workload_guard`
    hands one down): `check` refuses a workload of `nodes` flows and compute steps that would
    not fit the memory limit beside the `existing()` ones (once its first iteration is built),
    `progress` refuses it from its projection as it goes.  With `estimate` (`rocesim check`
    sets it) a large workload is only sized: `build` counts its projection in
    `estimated_nodes` instead of returning it."""

    ESTIMATE_FROM = 0.02         # fraction of a large workload built before `estimate` stops it
    ESTIMATE_ABOVE = 1_000_000   # nodes a workload must be projected to have for that
    # a bounded prefix: once a generator has built this many nodes its projection is trusted,
    # however small a fraction of a long input they are (a million-layer model is sized,
    # or refused, from its first layers, not from its first percent)
    PREFIX_NODES = 100_000
    PREFIX_MARGIN = 2            # ... to refuse a run from it: the projection at least this many times the limit

    def __init__(self, memory: MemoryLimit, existing: Callable[[], int]):
        self.memory = memory
        self.existing = existing
        self.estimate = False
        self.estimated_nodes = 0
        self.estimated_empty: list = []     # the `empty` of the workloads sized, not built

    def check(self, what: str, nodes: int) -> None:
        """Refuse a workload of `nodes` flows and compute steps that would not fit."""
        self.memory.flows("iterations", what, self.existing(), nodes)

    def reading(self, key: str, what: str, nbytes: int) -> None:
        """Refuse reading an input (`what`, at `key`) once what its reading holds, `nbytes`,
        would not fit the memory limit beside the topology and the existing flows."""
        self.memory.holds(key, what, memory_estimate(*self.memory.shape, self.existing()) + int(nbytes))

    def progress(self, what: str, nodes: int, fraction: float, hint: str = "") -> None:
        """A generator has built `fraction` of its graph (`nodes` so far): refuse it now if
        the projected whole would not fit the memory limit (when not estimating, from a
        tenth on, or from a bounded prefix of PREFIX_NODES nodes when the projection is
        PREFIX_MARGIN times the limit: a projection from less may overshoot); with
        `estimate` from its first percent or that prefix, and stop a large one (raise
        `WorkloadEstimated`) once it has built ESTIMATE_FROM of itself or that prefix."""
        prefix = nodes >= self.PREFIX_NODES
        if not (prefix or fraction >= (0.01 if self.estimate else 0.1)):
            return
        projected = int(nodes / max(fraction, 1e-12))
        first = f"{fraction:.0%}" if fraction >= 0.01 else f"{nodes:,} nodes"
        if self.estimate or fraction >= 0.1 or projected > self.PREFIX_MARGIN * self._room():
            self.check(f"{what} (projected from its first {first}{hint})", projected)
        if self.estimate and (fraction >= self.ESTIMATE_FROM or prefix) and projected > self.ESTIMATE_ABOVE:
            raise WorkloadEstimated(projected)

    def _room(self) -> int:
        """About how many more nodes fit the memory limit beside the topology and the existing ones."""
        left = self.memory.limit - memory_estimate(*self.memory.shape, self.existing())
        return max(left, 0) // MEMORY_PER_FLOW

    def build(self, make: Callable, *args, **kwargs):
        """`make(*args, **kwargs)` (a generator's graph), or None when the guard stopped it
        to size it (its projected nodes added to `estimated_nodes`, its empty collectives to
        `estimated_empty`)."""
        try:
            return make(*args, **kwargs)
        except WorkloadEstimated as e:
            self.estimated_nodes += e.nodes
            if e.empty is not None:
                self.estimated_empty.append(e.empty)
            return None


def _raise_to(need) -> str:
    """A round size at least `need`, for the hint in the message."""
    gb = -(-need // 10**9)
    unit, value = "GB", gb
    if gb >= 10_000:
        unit, value = "TB", -(-gb // 1000)
    return f"{value}{unit}"
