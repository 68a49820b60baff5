"""The Python API: build a network, add flows, run, get numpy arrays back.

    >>> from rocesim import Simulation, topology
    >>> sim = Simulation(topology.star(hosts=4, rate="100Gbps", delay="1us"))
    >>> f = sim.add_flow(src=1, dst=0, size="1MB")
    >>> res = sim.run()
    >>> res.flows["slowdown"][f]
    1.0

Python builds the world once into flat arrays (`_world`), hands them to the C core,
and runs it in slices so that a progress line moves and Ctrl-C stops cleanly with
the results so far.  Nothing here runs per packet.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import partial

import numpy as np

from rocesim import config

from rocesim.network import routing
from rocesim.network import faults as faults_mod
from rocesim.network import partition as partition_mod
from rocesim.cc import Context, get_scheme
from rocesim.cc.calibration import UNCALIBRATED, flow_calibration
from rocesim._core.engine import STOP_DEADLOCK, STOP_TIME, Core
from rocesim._core.params import core_params
from rocesim.errors import ScenarioError
from rocesim.memory import MemoryLimit
from rocesim.network.platform import Platform
from rocesim.network.topology import Topology
from rocesim.results import Results
from rocesim.results.run import CoreReadout
from rocesim.results.sampling import Sampler
from rocesim.training.collectives import DEFAULT_ALGORITHM, Collectives, append_collective
from rocesim.training.graph import Graph, TrainingGraph, TrainingInfo, WorkloadEstimated
from rocesim.training.nccl import PXN_DEFAULT, NcclConfig
from rocesim.run_loop import RunLoop, threads_to_run
from rocesim.run_progress import RunProgress
from rocesim.settings import show
from rocesim.units import MAX_TIME_PS, format_rate, format_size, format_time, parse_rate, parse_size, parse_time

@dataclass
class _FlowColumns:
    """Flows added so far, kept as lists of numpy chunks until the run."""

    def __post_init__(self):
        self.chunks: list[dict] = []
        self.n = 0
        self.edges: list[tuple[np.ndarray, np.ndarray]] = []    # (child ids, parent ids)
        self.paths: dict[int, list[int]] = {}

    def append(self, **cols) -> np.ndarray:
        count = len(cols["src"])
        ids = np.arange(self.n, self.n + count, dtype=np.int64)
        self.chunks.append(cols)
        self.n += count
        return ids

    def edge_arrays(self, copy=True) -> tuple[np.ndarray, np.ndarray]:
        """(child ids, parent ids) of every dependency added so far, in the order added
        (`copy=False`: the arrays held, when there is one pair, to be read only)."""
        if not self.edges:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        if len(self.edges) == 1 and not copy:
            return self.edges[0]
        return np.concatenate([c for c, _ in self.edges]), np.concatenate([p for _, p in self.edges])

    def column(self, name, dtype, default=0, copy=True) -> np.ndarray:
        """One column over all chunks; chunks without it contribute `default` (`copy=False`:
        a read-only view of the array held, when one chunk holds the column in `dtype`)."""
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


class Simulation:
    """A RoCE network and the traffic to run on it.

    Parameters
    ----------
    topology : rocesim.network.topology.Topology or rocesim.network.platform.Platform
        Hosts 0..H-1 and switches; see `rocesim.network.topology` for builders.  A `Platform`
        (multi-GPU servers, `rocesim.network.platform`) makes its NICs the hosts and its GPUs the
        ranks of collectives and workloads; with a plain topology, rank = host.
    switch, nic : dict, optional
        Settings as in the YAML `switch:` and `nic:` sections (`rocesim keys` lists
        them with defaults); unit strings such as "32MB" or "50us".
    cc : str
        Congestion-control scheme (`rocesim schemes` lists them).
    cc_params : dict, optional
        The scheme's parameters, by the paper's symbols.
    routes : list of dict, optional
        Per-switch next-hop overrides `{switch: S, dst: D, next: N}`.
    seed : int
        Seeds ECMP hashing and ECN marking; the same seed gives the same run.
    deadlock : bool or dict, optional
        PFC deadlock detection (`rocesim keys` lists `deadlock.*`): True, or
        {"interval": "100us", "threshold": "1ms", "stop": False}.
    memory_limit : size, optional
        The most memory the topology and its traffic may need (e.g. "32GB"; default 75%
        of the machine's): a topology or workload estimated above it is refused before it
        is built (`rocesim.memory`).
    nccl : dict, optional
        How NCCL runs collectives with the nccl_ring algorithm (`rocesim keys nccl`):
        {"channels": "auto", "buffer": "4MiB", "step_latency": "1us", ...}.
    mode : str
        "packet" (default: every packet simulated) or "flow" (network flows as fluids
        sharing link capacity max-min fairly; `rocesim keys` says more).  Flow mode
        refuses what acts on packets (`config.FLOW_MODE_REFUSES`): a scheme written in
        Python, deadlock detection, the PFC watchdog, faults, sampling.
    flow : dict, optional
        The flow mode's calibration (`rocesim keys flow`): {"share": 0.9, "startup": "2us"},
        each 'auto' by default: the scheme's measured calibration (`rocesim.cc.calibration`;
        1 and 0 for a scheme it has no entry for).  Ignored in packet mode.
    partition : str
        How the packet core cuts the network into parts run in windows of the lookahead
        (issue 20; `rocesim.network.partition`): "none" (one part, the engine as always),
        "leaves", "pods", or "auto" (default: `config.AUTO_PARTITION`; one part in flow
        mode).  The results depend on it (summary.json records it), never on the threads
        `run` uses.
    """

    def __init__(self, topology, *, switch=None, nic=None, cc="none", cc_params=None,
                 routes=None, seed=1, deadlock=None, memory_limit=None, nccl=None, mode="packet",
                 flow=None, partition="auto"):
        if not isinstance(topology, (Platform, Topology)):
            raise ScenarioError("topology", f"expected a Topology (rocesim.network.topology) or a Platform "
                                            f"(rocesim.network.platform), got {show(topology)}")
        self.platform = topology if isinstance(topology, Platform) else Platform.hosts(topology)
        topology = self.platform.topology
        topology.validate()
        self.memory = _memory_limit(memory_limit)
        self.memory.topology("topology", topology.name, topology.n_hosts, topology.n_switches, topology.n_links)
        self.topology = topology
        self.seed = config.SEED.parse(seed, "seed")
        self.mode = config.MODE.parse(mode, "mode")
        self.partition_setting = config.PARTITION.parse(partition, "partition")    # as given ('auto' kept)
        self.scheme = get_scheme(cc)
        self.cc_params = self.scheme.resolve_params(cc_params)
        self.switch = config.SWITCH.resolve(switch, "switch")
        if isinstance(nic, dict) or nic is None:      # the scheme's NIC defaults, unless set
            nic = {**self.scheme.nic_defaults(self.cc_params), **(nic or {})}
        self.nic = config.NIC.resolve(nic, "nic")
        self.deadlock = config.resolve_deadlock(deadlock)
        # how the nccl_* collective algorithms behave ('auto' pipeline: what the mode runs best)
        self.nccl = NcclConfig.resolve(nccl, "nccl", self.mode)
        self._refuse_in_flow_mode()
        self.flow = self._fluid_calibration(flow)
        self.ports = routing.build_ports(topology)
        self._overrides = _parse_overrides(routes or [])
        self._flows = _FlowColumns()
        self.faults = []             # rocesim.network.faults.Fault, in the order added
        self.collectives = Collectives()     # CollectiveRecord of every collective added (kept in batches)
        # `rocesim check`: large workloads sized from their first part, not built (workload_progress)
        self.estimate_workloads = False
        self.estimated_nodes = 0
        self.iterations = []         # iteration ids of training workloads
        self.iteration_jobs = {}     # iteration id -> the job (workload) it belongs to
        self.job_ranks = {}          # job name -> its ranks (jobs hold disjoint ranks)
        self._running = False        # run() is going: the world is the core's, not to be changed
        # the network as arrays, built (and checked) once: routes, PFC and ECN per port
        self._network, self._params = self._network_arrays()
        self._parts = self._run_in_parts(self.partition_setting)

    @property
    def partition_level(self) -> str:
        """The level the packet core runs at: "none" (one part), "leaves" or "pods"
        (`partition` as given, 'auto' resolved; a level may give one part, e.g. on a star)."""
        return self._partition_level

    @property
    def n_parts(self) -> int:
        """The parts the packet core runs in (1: the engine as always)."""
        return 1 if self._parts is None else self._parts.n_parts

    @property
    def lookahead_ps(self) -> int:
        """The lookahead of a run in parts: the smallest delay of a link between two parts
        (0 in one part)."""
        return 0 if self._parts is None else self._parts.lookahead_ps

    def _run_in_parts(self, asked: str):
        """The Partition the packet core runs in, or None for one part (the engine as
        always), for `partition` `asked` (issue 20): its parts run in windows of the
        lookahead L.  A dependency whose parent completes in another part than its child
        starts in takes effect max(delay, L) after the parent, not `delay` after it.  Flow
        mode runs in one part: `partition` other than 'auto' or 'none' is refused there."""
        level = self._partition_level = config.AUTO_PARTITION if asked == "auto" else asked
        if level == "none":
            return None
        parts = self.partition(level)
        if parts.n_parts == 1:
            return None
        if self.mode == "flow":
            if asked == "auto":
                self._partition_level = "none"
                return None
            raise ScenarioError("mode", f"flow mode runs in one part: a run in parts (partition: {level}) is for "
                                        "packet mode; use partition: none")
        return parts

    def _refuse_in_flow_mode(self) -> None:
        """What `mode: flow` cannot run, refused before anything is built."""
        if self.scheme.py_class is not None:
            config.refuse_in_flow_mode(self.mode, "cc.scheme", f"{self.scheme.name} is written in Python")
        if self.deadlock["enabled"]:
            config.refuse_in_flow_mode(self.mode, "deadlock", "deadlock detection is on")
        if self.switch["pfc"]["watchdog"]["enabled"]:
            config.refuse_in_flow_mode(self.mode, "switch.pfc.watchdog.enabled", "the PFC watchdog is on")

    def _fluid_calibration(self, given) -> dict:
        """The `flow:` section resolved (checked in both modes): {share, startup (ps),
        source: {share, startup}}, each value's source 'given', 'calibration' (the scheme's
        entry in rocesim/cc/flow_calibration.json) or 'none' (the scheme has no entry, or
        packet mode, where the values do nothing: the bare fluid's 1 and 0)."""
        flow = config.FLOW.resolve(given, "flow")
        calibrated = flow_calibration(self.scheme.name) if self.mode == "flow" else None
        auto = dict(zip(("share", "startup"), calibrated or UNCALIBRATED))
        out, source = {}, {}
        for key in ("share", "startup"):
            given_here = flow[key] != "auto"
            out[key] = flow[key] if given_here else auto[key]
            source[key] = "given" if given_here else "calibration" if calibrated else "none"
        return {**out, "source": source}

    # --- traffic -------------------------------------------------------------------

    @property
    def n_flows(self) -> int:
        return self._flows.n

    def add_flow(self, src, dst, size, start=0, *, prio=config.DEFAULT_FLOW_PRIORITY,
                 path=None, after=(), delay=0, tag=0, rate=None) -> int:
        """Add one flow of `size` bytes from host `src` to host `dst`; returns its id.

        `start` is used when the flow has no parents (`after`); otherwise the flow starts
        `delay` after the last of its parents is done (a data parent when its last byte
        has arrived, a compute parent when its duration has elapsed).  `path` is an
        explicit node list [src, switch, ..., dst] for the data packets.  `rate` (e.g.
        "2Gbps") caps the flow's sending rate whatever the congestion-control scheme says
        (its NIC paces at the lower of the two); its ideal FCT counts the cap.
        """
        self._not_running("add_flow")
        key = f"flows[{self.n_flows}]"
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
        self._check_sizes(np.array([size]), f"{key}.size", rate_cap=limit)
        ports = None
        if path is not None:                      # checked before anything is added
            if not isinstance(path, (list, tuple)):
                raise ScenarioError(f"{key}.path", f"expected a list of node ids, got {path!r}")
            ports = routing.path_ports(self.ports, list(path), f"{key}.path")
            if path[0] != src or path[-1] != dst:
                raise ScenarioError(f"{key}.path", f"must run from {src} to {dst}, got {path[0]} .. {path[-1]}")
        fid = self._append(src, dst, size, start, prio, 0, after, delay, tag, key, limit)
        if ports is not None:
            self._flows.paths[fid] = ports
        return fid

    def add_compute(self, host, duration, *, after=(), delay=0, start=0, tag=0) -> int:
        """Add a compute step of `duration` on `host` (no packets); returns its id."""
        self._not_running("add_compute")
        key = f"flows[{self.n_flows}]"
        host = self.host(host, f"{key}.host")
        duration = parse_time(duration, f"{key}.duration", bare_ok=True)
        if duration <= 0:
            raise ScenarioError(f"{key}.duration", "must be positive")
        return self._append(host, host, duration, start, 0, 1, after, delay, tag, key)

    def add_flows(self, table, tag=None) -> np.ndarray:
        """Add every flow of a `rocesim.traffic.FlowTable`; returns their ids."""
        self._not_running("add_flows")
        table.validate(self.topology.n_hosts)
        self._check_sizes(table.size, "traffic", rows=True)
        return self._flows.append(
            src=table.src, dst=table.dst, size=table.size, start=table.start,
            prio=table.prio, compute=np.zeros(len(table), np.int32),
            delay=np.zeros(len(table), np.int64),
            tag=table.tag if tag is None else np.full(len(table), tag, np.int32), dport=table.dport)

    def add_graph(self, graph) -> int:
        """Append a `rocesim.training.graph.Graph` (flows, compute steps, dependencies); returns the
        id of its node 0 (graph id k becomes flow id offset + k)."""
        self._not_running("add_graph")
        H = self.topology.n_hosts
        src, dst, size = graph.column("src"), graph.column("dst"), graph.column("size")
        compute, prio = graph.column("compute"), graph.column("prio")
        if src.size and (src.min() < 0 or src.max() >= H or dst.min() < 0 or dst.max() >= H):
            raise ScenarioError("graph", f"a node is placed on a host outside 0..{H - 1}")
        data = compute == 0
        if (size[data] <= 0).any() or (size < 0).any():
            raise ScenarioError("graph", "data flows need a positive size, compute steps a duration >= 0")
        if (data & ((prio < 1) | (prio > 7))).any():
            raise ScenarioError("graph", "data flows use priorities 1..7")
        self._check_sizes(size[data], "graph")
        for name, values in (("start", graph.column("start")), ("delay", graph.column("delay")),
                             ("compute duration", size[~data])):
            if values.size and values.max() > MAX_TIME_PS:
                raise ScenarioError("graph", f"a node's {name} exceeds the simulator's time horizon "
                                             f"({format_time(MAX_TIME_PS)})")
        offset = self.n_flows
        self._flows.append(src=src, dst=dst, size=size, start=graph.column("start"), prio=prio,
                           compute=compute, delay=graph.column("delay"), tag=graph.column("tag"),
                           collective=graph.column("collective"), iteration=graph.column("iteration"))
        children, parents = graph.edges(np.int32)
        if children.size:
            # ids of this graph's own nodes: int32 halves what a million-flow graph keeps
            children += np.int32(offset)
            parents += np.int32(offset)
            self._flows.edges.append((children, parents))
        return offset

    def add_collective(self, op, algorithm=None, ranks="all", size="1MB", *, chunks=1,
                       prio=config.DEFAULT_FLOW_PRIORITY, start=0, group_size=None, after=(), pxn=PXN_DEFAULT,
                       job=""):
        """Add a collective (see `rocesim.training.collectives`) on `ranks` (GPU ranks of the
        platform; with a plain topology, hosts; "all" = every rank).

        It starts at `start`, or when every flow id in `after` is done.  `pxn` forwards
        traffic to other rails through the scale-up domain first (rail-aligned, as NCCL's
        PXN; on by default, as in NCCL).  Returns its `CollectiveRecord` (flow ids of its per-rank start and done
        nodes and its flows).
        """
        self._not_running("add_collective")
        ranks = self.ranks(ranks, "ranks")
        g = Graph()
        rec = append_collective(g, op, algorithm or DEFAULT_ALGORITHM.get(op, "ring"), ranks,
                             parse_size(size, "size", bare_ok=True), chunks=chunks, prio=prio, cid=0,
                             start=parse_time(start, "start", bare_ok=True), group_size=group_size,
                             platform=self.platform, pxn=pxn, job=job, nccl=self.nccl)
        rec, = self.add_workload(TrainingGraph(g, [rec], 0, job)).collectives
        after = np.asarray(list(after), np.int64)
        if after.size:
            self.add_dependencies(np.repeat(rec.start_nodes, after.size), np.tile(after, rec.start_nodes.size))
        return rec

    def add_workload(self, workload) -> "TrainingInfo":
        """Add what a workload generator made (a `rocesim.training.graph.TrainingGraph`: its
        graph, collectives, iterations and job): the graph's iteration and collective ids
        become this simulation's; returns their global ids."""
        self._not_running("add_workload")
        first_iteration, first_collective = len(self.iterations), len(self.collectives)
        workload.graph.offset_ids(first_iteration, first_collective)
        offset = self.add_graph(workload.graph)
        collectives = Collectives(workload.collectives).shifted(offset, first_collective)
        iterations = list(range(first_iteration, first_iteration + workload.iterations))
        self.collectives.extend(collectives.parts())
        self.iterations.extend(iterations)
        self.iteration_jobs.update({i: workload.job for i in iterations})
        return TrainingInfo(iterations, collectives)

    def workload_check(self, what: str, nodes: int) -> None:
        """Refuse a workload of `nodes` flows and compute steps that would not fit the memory
        limit (the generators call it once their first iteration is built)."""
        self.memory.flows("iterations", what, self.n_flows, nodes)

    ESTIMATE_FROM = 0.02         # fraction of a large workload built before `estimate_workloads` stops it
    ESTIMATE_ABOVE = 1_000_000   # nodes a workload must be projected to have for that

    def workload_progress(self, what: str, nodes: int, fraction: float, hint: str = "") -> None:
        """A generator has built `fraction` of its graph (`nodes` so far): refuse it now if
        the projected whole would not fit the memory limit (when running, from a tenth on: a
        projection from less may overshoot); with `estimate_workloads` (as `rocesim check`
        sets it) from the start, and stop a large one (raise `WorkloadEstimated`) once it
        has built ESTIMATE_FROM of itself."""
        if fraction < 0.1 and not self.estimate_workloads:
            return
        projected = int(nodes / max(fraction, 1e-9))
        self.memory.flows("iterations", f"{what} (projected from its first {fraction:.0%}{hint})", self.n_flows,
                          projected)
        if self.estimate_workloads and fraction >= self.ESTIMATE_FROM and projected > self.ESTIMATE_ABOVE:
            raise WorkloadEstimated(projected)

    def flow_column(self, name: str, dtype, default=0, copy=True) -> np.ndarray:
        """One column of every flow added so far (src, dst, size, start, prio, tag, dport,
        collective, iteration, compute, delay, rate_limit), as a numpy array (`copy=False`:
        a read-only view of the Simulation's own array when it holds one)."""
        return self._flows.column(name, dtype, default, copy)

    def ranks(self, ranks="all", key="ranks") -> np.ndarray:
        """`ranks` ("all" or a list of GPU ranks) checked against the platform, as an array."""
        n = self.platform.n_ranks
        if isinstance(ranks, str) and ranks == "all":
            return np.arange(n)
        out = []
        for r in ranks:
            if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or not 0 <= r < n:
                raise ScenarioError(key, f"{r!r} is not a rank; ranks are 0..{n - 1}")
            out.append(int(r))
        return np.asarray(out, np.int64)

    def add_dependencies(self, children, parents):
        """Make each `children[i]` wait for `parents[i]` (arrays of flow ids)."""
        self._not_running("add_dependencies")
        self._not_running("add_dependencies")
        children, parents = (_flow_ids(ids, name, self.n_flows) for ids, name in ((children, "children"),
                                                                                  (parents, "parents")))
        if children.shape != parents.shape:
            raise ScenarioError("dependencies", "children and parents must have the same length")
        self._flows.edges.append((children, parents))

    def _append(self, src, dst, size, start, prio, compute, after, delay, tag, key, rate_limit=0) -> int:
        start = parse_time(start, f"{key}.start", bare_ok=True)
        delay = parse_time(delay, f"{key}.delay", bare_ok=True)
        fid = self.n_flows
        after = [after] if isinstance(after, (int, np.integer)) else list(after)
        for parent in after:
            if not (isinstance(parent, (int, np.integer)) and 0 <= parent < fid):
                raise ScenarioError(f"{key}.after", f"{parent!r} is not the id of an earlier flow")
        self._flows.append(src=[src], dst=[dst], size=[size], start=[start], prio=[prio],
                           compute=[compute], delay=[delay], tag=[tag], dport=[100],
                           rate_limit=[rate_limit])
        if after:
            self._flows.edges.append((np.full(len(after), fid, np.int64), np.asarray(after, np.int64)))
        return fid

    def _check_sizes(self, size, key, rate_cap=0, rows=False) -> None:
        """Refuse flows too large for the simulator's time horizon (`MAX_TIME_PS`): every
        time the core computes for a flow (its ideal FCT first) must stay within it, so a
        flow must cross the slowest link of the topology (or its rate cap) in time, with
        headers, ACKs aside.  Above that, int64 picoseconds would overflow."""
        if not len(size):
            return
        rate = int(self.ports.rate_bps.min()) if len(self.ports.rate_bps) else 0
        rate = min(rate, rate_cap) if rate_cap else rate
        nic = self.nic
        frame = nic["payload"] + nic["header"] + nic["int_header"]
        most = MAX_TIME_PS * rate // (8 * 10**12) * nic["payload"] // frame
        most -= most % 10 ** max(0, len(str(most)) - 3)          # three digits, rounded down
        big = np.flatnonzero(np.asarray(size) > most)
        if big.size:
            row = int(big[0])
            raise ScenarioError(key, f"{'flow ' + str(row) + ': ' if rows else ''}{format_size(int(size[row]))} "
                                     f"cannot be sent at {format_rate(rate)} within the simulator's time horizon "
                                     f"({format_time(MAX_TIME_PS)}): at most {format_size(most)}")

    def dependency_hosts(self) -> tuple[np.ndarray, np.ndarray]:
        """Per dependency edge added so far, in the order added: the host where its parent
        completes (a data flow's destination, a compute step's own host) and the host where
        its child starts (its source), as two int64 arrays."""
        fl = self._flows
        children, parents = fl.edge_arrays()
        src, dst = fl.column("src", np.int64), fl.column("dst", np.int64)
        done = np.where(fl.column("compute", np.int8)[parents] != 0, src[parents], dst[parents])
        return done, src[children]

    def partition(self, level="leaves") -> partition_mod.Partition:
        """The parts the packet core cuts this network into at `level` (issue 20):
        ``"leaves"``, ``"pods"`` or ``"none"``, the rule of `rocesim.network.partition`.
        A run uses the level given as `Simulation(partition=...)` (`partition_level`)."""
        return partition_mod.partition(self.platform, self.ports, level)

    def dependency_crossing(self, partition=None) -> float:
        """The share of the dependency edges added so far whose parent completes in another
        part of `partition` (default: `self.partition()`) than its child starts in: the
        edges a parallel run would pass between parts (0.0 without edges)."""
        part = self.partition() if partition is None else partition
        if not isinstance(part, partition_mod.Partition):
            raise ScenarioError("partition", f"expected a Partition (Simulation.partition), got {show(part)}")
        return part.crossing_share(*self.dependency_hosts())

    def _not_running(self, what):
        """Refuse to change the world while run() is going (a scheme's callback calling
        add_flow, say): the core took the flows, dependencies and faults when run() began,
        and the results are read against them."""
        if self._running:
            raise ScenarioError(what, "cannot be called while run() is going (from a congestion-control "
                                      "callback?): the run took its flows and faults when it began; add "
                                      "them before run(), with a later `start` or parents (`after`) to "
                                      "have them begin during it")

    def host(self, h, key: str = "host") -> int:
        """`h` checked as a host id of the topology (ScenarioError naming `key` if not)."""
        H = self.topology.n_hosts
        if isinstance(h, bool) or not isinstance(h, (int, np.integer)) or not 0 <= h < H:
            raise ScenarioError(key, f"{show(h)} is not a host; hosts are 0..{H - 1}")
        return int(h)

    def _scheme_context(self, core) -> Context:
        """What `auto` scheme parameters depend on.  As the HPCC fork's third.cc, the base
        RTT that sizes HPCC's T and the windows (BDP = that RTT x the fastest host link) is
        the largest between any two hosts (taken at each host's farthest peer in hops), or
        of any flow if larger (explicit paths)."""
        host_rate = int(self.ports.rate_bps[self.ports.host_port].max())
        src = np.arange(self.topology.n_hosts, dtype=np.int32)
        max_rtt = int(max(core.base_rtt_between(src, self._farthest_host).max(initial=0),
                          core.base_rtt_ps().max(initial=0)))
        return Context(host_rate_bps=host_rate, max_base_rtt_ps=max_rtt,
                       max_bdp_bytes=int(max_rtt * host_rate / 8e12))

    # --- faults -------------------------------------------------------------------------

    def add_fault(self, kind=None, at=None, **kw):
        """Schedule a fault (see `rocesim.network.faults`): `add_fault("nic_stop", "100us", host=3,
        **{"for": "1ms"})`, `add_fault("link_down", "200us", link=[9, 12], until="1ms")`,
        `add_fault("link_rate", "300us", link=[9, 12], rate="25Gbps")`."""
        self._not_running("add_fault")
        entry = {**({} if kind is None else {"kind": kind}), **({} if at is None else {"at": at}), **kw}
        key = f"faults[{len(self.faults)}]"
        f = faults_mod.parse(entry, key, self.ports, self.topology.n_hosts)
        config.refuse_in_flow_mode(self.mode, key, f"a {f.kind} fault")
        self.faults.append(f)
        return f

    # --- the world as arrays -----------------------------------------------------------

    def _world(self, flows=True) -> tuple[dict, dict]:
        """Everything the core needs: the network arrays plus the flows added so far (none
        with `flows=False`)."""
        world = {**self._network, **self._flow_arrays(self._flows if flows else _FlowColumns())}
        if self._parts is None:
            return world, self._params
        world["part_of_node"] = self._parts.part_of_node
        return world, {**self._params, "lookahead_ps": self._parts.lookahead_ps}

    def _network_arrays(self) -> tuple[dict, dict]:
        topo, ports, sw, nic = self.topology, self.ports, self.switch, self.nic
        H, N = topo.n_hosts, topo.n_nodes
        tables = routing.build_routes(ports, self._overrides)
        host_rate = int(ports.rate_bps[ports.host_port].min())
        world = dict(n_hosts=H, n_nodes=N, port_node=ports.node, port_peer=ports.peer,
                     port_rate_bps=ports.rate_bps, port_delay_ps=ports.delay_ps,
                     host_port=ports.host_port,
                     switch_buffer=np.full(N - H, sw["buffer"], np.int64),
                     route_off=tables.group_off, route_cnt=tables.group_cnt, route_ports=tables.ports,
                     route_class=tables.host_class)
        self._farthest_host = tables.farthest
        world.update(self._pfc_arrays(host_rate))
        world["port_uplink"] = routing.uplinks(ports, tables)
        world.update(self._ecn_arrays())
        params = core_params(seed=self.seed, nic=nic, switch=sw, needs_int=self.scheme.needs_int,
                             mode=self.mode, flow=self.flow)
        return world, params

    def _pfc_arrays(self, host_rate: int) -> dict:
        ports, pfc = self.ports, self.switch["pfc"]
        need = self.pfc_headroom_needed()
        if pfc["headroom"] == "auto":
            # the HPCC fork's 3 x rate x delay, raised to the worst case where that is short
            # (short links: 3 x rate x delay forgets the frames in progress)
            # (in floating point: rate x delay in bit-picoseconds overflows int64 at 400G x 10us)
            fork = np.floor(3.0 * ports.rate_bps * ports.delay_ps / 8e12).astype(np.int64)
            headroom = np.maximum(fork, need)
        else:
            headroom = np.full(len(ports.node), pfc["headroom"], np.int64)
            short = np.flatnonzero((headroom < need) & (ports.node >= self.topology.n_hosts))
            if pfc["enabled"] and short.size:
                i = int(short[np.argmax(need[short])])
                raise ScenarioError(
                    "switch.pfc.headroom",
                    f"{format_size(int(headroom[i]))} cannot hold what may still arrive after a PAUSE "
                    f"is decided on the port of switch {int(ports.node[i])} towards node "
                    f"{int(ports.peer_node[i])} ({format_size(int(need[i]))}: three frames, the PAUSE "
                    "frames and a round trip at line rate); raise it or use 'auto'")
        # dynamic threshold shift: 3 at host speed, one less per doubling above it
        # (HPCC fork third.cc: alpha 1/8 at NIC rate, doubling with each doubling of rate)
        # (the fork halves the rate until it is at most the host's: ceil of log2 of the ratio)
        doublings = np.ceil(np.log2(np.maximum(ports.rate_bps / host_rate, 1.0)) - 1e-9)
        shift = np.maximum(3 - doublings, 0).astype(np.int32)
        if pfc["enabled"]:
            self._check_pfc_buffer(headroom)
        return dict(port_headroom=headroom.astype(np.int64), port_pfc_shift=shift)

    def pfc_headroom_needed(self) -> np.ndarray:
        """Per port: the most bytes that can still arrive on one lossless priority after the
        switch decides XOFF for it (numpy int64; what `headroom: auto` guarantees).

        Store-and-forward, the decision is taken when a packet has fully arrived, and that
        packet may itself land in headroom (one frame).  The PAUSE then waits for the frame
        the port is transmitting (one frame at the port's rate) and for PAUSE frames of the
        other lossless priorities, is serialized, and crosses the wire; meanwhile the peer
        keeps sending at its rate, and the bytes it sent are still on the wire coming back
        (a round trip of propagation); when the PAUSE arrives the peer finishes the frame it
        has started (one frame).  So, with r_in the peer's rate and r_out this port's:

            frame + r_in x (frame / r_out + n_lossless x pause / r_out + d_out + d_in) + frame

        (the accounting of IEEE 802.1Qbb's delay-value annex and of vendors' headroom
        calculators, e.g. Cisco's "PFC headroom" and SONiC's buffer calculation: MTU terms
        for the frames in progress at both ends plus the cable's round trip).
        """
        ports, nic = self.ports, self.nic
        frame = nic["payload"] + nic["header"] + (nic["int_header"] if self.scheme.needs_int else 0)
        n_lossless = len(self.switch["pfc"]["priorities"])
        r_out = ports.rate_bps.astype(np.float64)
        r_in = ports.rate_bps[ports.peer].astype(np.float64)
        rtt_ps = (ports.delay_ps + ports.delay_ps[ports.peer]).astype(np.float64)
        waiting = (frame + n_lossless * nic["pause_size"]) * r_in / r_out      # bytes at r_in
        # + 1 byte per term that tx_time rounds up (three serializations: a few ps each)
        need = 2 * frame + np.ceil(waiting + r_in * rtt_ps / 8e12) + 3
        return need.astype(np.int64)

    def _check_pfc_buffer(self, headroom):
        """A lossless switch must hold every port's headroom and reserve, with room to spare."""
        ports, H = self.ports, self.topology.n_hosts
        on_switch = ports.node >= H
        need = np.bincount(ports.node[on_switch] - H, weights=headroom[on_switch],
                           minlength=self.topology.n_switches)
        need += np.bincount(ports.node[on_switch] - H, minlength=self.topology.n_switches) \
            * self.switch["pfc"]["reserve"]
        worst = int(np.argmax(need)) if need.size else 0
        if need.size and need[worst] >= self.switch["buffer"]:
            raise ScenarioError(
                "switch.buffer", f"{format_size(self.switch['buffer'])} cannot hold the PFC headroom and "
                f"reserve of switch {H + worst} ({format_size(int(need[worst]))}); raise the buffer or "
                "lower switch.pfc.headroom")

    def _ecn_arrays(self) -> dict:
        ecn, rates = self.switch["ecn"], self.ports.rate_bps
        n = len(rates)
        kmin, kmax, pmax = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.float64)
        for i, r in enumerate(rates):
            dmin, dmax, dp = self.scheme.ecn_defaults(int(r), self.cc_params)
            kmin[i] = _per_rate(ecn["kmin"], int(r), dmin, "switch.ecn.kmin")
            kmax[i] = _per_rate(ecn["kmax"], int(r), dmax, "switch.ecn.kmax")
            pmax[i] = _per_rate(ecn["pmax"], int(r), dp, "switch.ecn.pmax")
        if np.any(kmax < kmin):
            raise ScenarioError("switch.ecn.kmax", "must not be below kmin")
        return dict(port_kmin=kmin, port_kmax=kmax, port_pmax=pmax)

    def _flow_arrays(self, fl) -> dict:
        """The flows `fl` (a _FlowColumns), their paths and dependencies as the core's
        arrays; dependencies on flows that do not exist and data flows between islands
        (rail-only) are refused."""
        F = fl.n
        path_off = np.full(F, -1, np.int32)
        path_ports = []
        for fid, ports in fl.paths.items():
            path_off[fid] = len(path_ports)
            path_ports.extend(ports)
        children, parents = fl.edge_arrays(copy=False)
        if children.size and (children.min() < 0 or children.max() >= F
                              or parents.min() < 0 or parents.max() >= F):
            raise ScenarioError("dependencies", "a dependency names a flow id that does not exist")
        if self.topology.islands:
            self._check_islands(fl)
        order = np.argsort(parents, kind="stable")
        n_children = np.bincount(parents, minlength=F).astype(np.int32)
        child_off = np.zeros(F, np.int32)
        if F:
            child_off[1:] = np.cumsum(n_children)[:-1]
        column = partial(fl.column, copy=False)        # (read only, by the core: no copies)
        return dict(
            flow_src=column("src", np.int32), flow_dst=column("dst", np.int32),
            flow_size=column("size", np.int64), flow_start=column("start", np.int64),
            flow_prio=column("prio", np.int32), flow_is_compute=column("compute", np.int32),
            flow_delay=column("delay", np.int64), flow_path_off=path_off,
            flow_rate_limit=column("rate_limit", np.int64),
            path_ports=np.asarray(path_ports, np.int32),
            flow_n_parents=np.bincount(children, minlength=F).astype(np.int32),
            flow_child_off=child_off, flow_n_children=n_children,
            child_idx=children[order].astype(np.int32, copy=False))

    def _check_islands(self, fl):
        """On a network of islands (rail-only), a data flow must stay inside one."""
        island = self.topology.island_of()
        src, dst = fl.column("src", np.int64), fl.column("dst", np.int64)
        bad = np.flatnonzero((fl.column("compute", np.int8) == 0) & (island[src] != island[dst]))
        if bad.size:
            f = int(bad[0])
            raise ScenarioError(f"flows[{f}]", f"hosts {src[f]} and {dst[f]} are on different rails of a "
                                "rail-only fabric (not connected); forward through the scale-up domain")

    # --- running -----------------------------------------------------------------------

    def run(self, stop=None, *, progress=None, slice="100us", events_per_slice=2_000_000,
            sample_interval=None, queue_ports=None, threads="auto") -> Results:
        """Run until every flow is done (or `stop`, a simulated time) and return Results.

        The core returns to Python after every `slice` of simulated time (or
        `events_per_slice` events, whichever comes first), so that the progress line moves
        and Ctrl-C ends the run early with the results so far (`interrupted`).
        `progress` (default: when stderr is a terminal) shows simulated time and speed.
        `sample_interval` (e.g. "10us") records flow rates and queues over time
        (`Results.samples`); `queue_ports` restricts the queues to those port ids
        (default: every switch egress port).

        `threads` ('auto': the cores this process may use, or a whole number >= 1) run
        the parts of the network (`partition`), at most one per part; a scheme written in
        Python runs on 1.  The outputs are the same for any number; `Results.threads` says
        how many ran, and when that is fewer than a number asked, one line on stderr says
        why (unless `progress=False`).

        A run that stalls (flows unfinished and nothing can move them) is searched for the
        PFC cycles that hold it, whether `deadlock` detection is on or not.  If a scheme
        written in Python raises, run() raises that exception with the results up to it
        in its `results` attribute.  The flows, dependencies and faults are fixed while it
        runs: adding any from a callback is refused (ScenarioError).
        """
        self._not_running("run")
        asked = config.THREADS.parse(threads, "threads")
        # without a stop time, the run ends at the time horizon at the latest
        t_stop = MAX_TIME_PS if stop is None else parse_time(stop, "stop", bare_ok=True)
        t_slice = parse_time(slice, "slice", bare_ok=True)
        if t_slice <= 0:
            raise ScenarioError("slice", "must be positive")
        if (isinstance(events_per_slice, bool) or not isinstance(events_per_slice, (int, np.integer))
                or events_per_slice <= 0):
            # (0 would return from every slice without an event: the run would never end)
            raise ScenarioError("events_per_slice", f"must be a positive whole number of events, "
                                                    f"got {events_per_slice!r}")
        interval = None
        if sample_interval is not None:
            interval = parse_time(sample_interval, "output.sample_interval", bare_ok=True)
            if interval <= 0:
                raise ScenarioError("output.sample_interval", "must be positive")
            config.refuse_in_flow_mode(self.mode, "output.sample_interval", "sampling is on")
        core, world = self._build_core()
        n_threads, note = self.threads_to_run(asked)
        if note is not None and progress is not False:
            print(f"rocesim: {note}", file=sys.stderr)
        sampler = None if interval is None else Sampler(core, interval, self.n_flows, self.ports, queue_ports)
        show = sys.stderr.isatty() if progress is None else progress
        loop = RunLoop(core, t_stop, t_slice, events_per_slice, sampler=sampler,
                       reroutes=faults_mod.route_updates(self.faults, self.ports), set_routes=self._set_routes,
                       progress=RunProgress(self.n_flows, None if stop is None else t_stop,
                                            threads=n_threads) if show else None,
                       n_flows=self.n_flows, deadlock_threshold=self.deadlock["threshold"], threads=n_threads)
        self._running = True
        try:
            end = loop.run()
        finally:
            self._running = False
        readout = CoreReadout.of(core)
        samples = None if sampler is None else sampler.tables(self.ports.node)
        del core, loop, sampler           # the core's memory is freed before the results' columns are made
        res = Results.from_core(self, readout, world, wall_s=end.wall_s, cpu_s=end.cpu_s,
                                interrupted=end.interrupted or end.failure is not None,
                                stop_ps=t_stop if end.status == STOP_TIME else None)
        del readout
        res.samples, res.threads = samples, n_threads
        res.summary["stalled"] = end.stalled
        res.summary["stopped_at_deadlock"] = end.status == STOP_DEADLOCK
        if end.failure is not None:
            # the run is not lost: its results up to the error travel with the exception
            end.failure.results = res
            if hasattr(end.failure, "add_note"):
                end.failure.add_note("rocesim: the run stopped at this error; its results so far are "
                                     "in this exception's `results`")
            raise end.failure
        return res

    def threads_to_run(self, threads="auto") -> tuple[int, str | None]:
        """(the threads a run of this simulation takes for `threads` asked, and a one-line
        note when it takes fewer than a number asked: more threads than parts, a scheme
        written in Python, a build without OpenMP); `rocesim check` prints the note."""
        asked = config.THREADS.parse(threads, "threads")
        return threads_to_run(asked, self.n_parts, python_scheme=self.scheme.py_class is not None)

    def check(self) -> None:
        """The cross-parameter checks the core would otherwise make first when run() builds
        it: the scheme's parameters finalized against the network (a Swift `fs_min_cwnd`
        above `fs_max_cwnd`, say).  The YAML loader calls it, so `rocesim check` refuses
        what `run` would."""
        core = Core(*self._world(flows=False))
        self.scheme.finalize(dict(self.cc_params), self._scheme_context(core))

    def _build_core(self):
        """The core with the world in it, the scheme finalized and installed, and the PFC
        deadlock detector, the watchdog and the faults set; returns (core, the network
        arrays the results still read)."""
        world, params = self._world()
        core = Core(world, params)
        for name in [k for k in world if k.startswith("flow_") or k in ("path_ports", "child_idx")]:
            del world[name]               # in the core now (the results read the Simulation's columns)
        self.cc_final = self.scheme.finalize(dict(self.cc_params), self._scheme_context(core))
        core.install_scheme(self.scheme.load_module(), self.scheme.install_params(self.cc_final),
                            needs_cnp=self.scheme.cnp_needed(self.cc_final))
        if self.deadlock["enabled"]:
            dl = self.deadlock
            core.enable_deadlock_detection(dl["interval"], dl["threshold"], dl["stop"])
        wd = self.switch["pfc"]["watchdog"]
        if wd["enabled"] and self.switch["pfc"]["enabled"]:
            core.enable_watchdog(wd["poll_interval"], wd["detection_time"], wd["restoration_time"],
                                 0 if wd["action"] == "drop" else 1)
        if self.faults:
            core.set_faults(*faults_mod.core_schedule(self.faults, self.pfc_headroom_needed()[self.ports.host_port]))
        return core, world

    def _set_routes(self, core, alive_ports) -> None:
        """The routing tables converged after a link went down or came back up."""
        tables = routing.build_routes(self.ports, self._overrides, alive_ports)
        core.set_routes(tables.group_off, tables.group_cnt, tables.ports, tables.host_class)


def _flow_ids(ids, key: str, n: int) -> np.ndarray:
    """`ids` as flow ids: whole numbers (never rounded) of flows that exist, 0..n-1."""
    a = np.asarray(ids)
    if a.dtype == bool or (a.size and not np.issubdtype(a.dtype, np.integer)):
        raise ScenarioError(key, f"expected flow ids (whole numbers), got {show(ids)}")
    a = a.astype(np.int64).ravel()
    bad = a[(a < 0) | (a >= n)]
    if bad.size:
        raise ScenarioError(key, f"{int(bad[0])} is not a flow id; flows are 0..{n - 1}")
    return a


def _memory_limit(limit) -> MemoryLimit:
    """A `MemoryLimit` (the YAML loader's own, shared) or a size for `Simulation(memory_limit=...)`."""
    if isinstance(limit, MemoryLimit):
        return limit
    if limit is None:
        return MemoryLimit(setting="Simulation(memory_limit=\"{}\")")
    size = parse_size(limit, "memory_limit", bare_ok=True)
    if size <= 0:
        raise ScenarioError("memory_limit", f"must be positive, got {limit!r}")
    return MemoryLimit(size, configured=True, setting="Simulation(memory_limit=\"{}\")")


def _per_rate(value, rate: int, default, key: str):
    """A per-rate setting's value for ports of `rate` bps: 'auto' -> `default`, a mapping by
    rate, or one value for every port."""
    if value == "auto":
        return default
    if isinstance(value, dict):
        if rate not in value:
            raise ScenarioError(key, f"no value for ports of rate {rate} bps; give one per link rate")
        return value[rate]
    return value


def _parse_overrides(routes) -> list[tuple[int, int, int]]:
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
