"""The Python API: build a network, add flows, run, get numpy arrays back.

    >>> from rocesim import Simulation, topology
    >>> sim = Simulation(topology.star(hosts=4, rate="100Gbps", delay="1us"))
    >>> f = sim.add_flow(src=1, dst=0, size="1MB")
    >>> res = sim.run()
    >>> res.flows["slowdown"][f]
    1.0

`Simulation` is the front: it checks what it is given and hands it to the parts below it
(`rocesim.world`): the settings resolved once (`RunSettings`), the network as the core's
arrays (`Network`), the dependency graph's nodes (`Nodes`), the core built from them
(`core_build`).  It runs the core in slices so that a progress line moves and Ctrl-C stops
cleanly with the results so far, and makes the results from a frozen record of the run
(`rocesim.results.record.RunRecord`).  Nothing here runs per packet.
"""
from __future__ import annotations

import sys

import numpy as np

from rocesim import config
from rocesim.errors import ScenarioError
from rocesim.memory import MemoryLimit, WorkloadGuard
from rocesim.network import faults as faults_mod
from rocesim.network import partition as partition_mod
from rocesim.network.platform import Platform
from rocesim.network.topology import Topology
from rocesim._core.engine import STOP_DEADLOCK, STOP_TIME, Core
from rocesim.results import Results
from rocesim.results.record import RunRecord
from rocesim.results.run import CoreReadout
from rocesim.results.sampling import Sampler
from rocesim.run_loop import RunLoop, choose_threads
from rocesim.run_progress import RunProgress
from rocesim.settings import show
from rocesim.training.algorithms import DEFAULT_ALGORITHM
from rocesim.training.collectives import Collectives, append_collective
from rocesim.training.graph import Graph, TrainingGraph, TrainingInfo
from rocesim.training.nccl import PXN_DEFAULT
from rocesim.units import MAX_TIME_PS, parse_size, parse_time
from rocesim.world import core_build
from rocesim.world.network import Network
from rocesim.world.nodes import Nodes
from rocesim.world.run_settings import RunSettings


def _setting(name: str, doc: str) -> property:
    """A read-only attribute of the Simulation that is one of its resolved settings."""
    return property(lambda self: getattr(self.settings, name), doc=doc)


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
        self.memory = MemoryLimit.of(memory_limit, 'Simulation(memory_limit="{}")', "memory_limit")
        self.memory.topology("topology", topology.name, topology.n_hosts, topology.n_switches, topology.n_links)
        self.topology = topology
        self.settings = RunSettings.resolve(switch=switch, nic=nic, cc=cc, cc_params=cc_params, seed=seed,
                                            deadlock=deadlock, nccl=nccl, mode=mode, flow=flow, partition=partition)
        # the network as arrays, built (and checked) once: routes, PFC and ECN per port
        self.network = Network.build(self.platform, self.settings, routes)
        self.ports = self.network.ports
        self._nodes = Nodes(topology, self.ports, self.settings.nic)
        self.faults = []             # rocesim.network.faults.Fault, in the order added
        self.collectives = Collectives()     # CollectiveRecord of every collective added (kept in batches)
        # what workload generators report to: the memory limit, and `rocesim check`'s sizing
        self.workload_guard = WorkloadGuard(self.memory, lambda: self.n_nodes)
        self.iterations = []         # iteration ids of training workloads
        self.iteration_jobs = {}     # iteration id -> the job (workload) it belongs to
        self.job_ranks = {}          # job name -> its ranks (jobs hold disjoint ranks)
        self.cc_final = None         # the scheme's parameters as the last run (or check) finalized them
        self._running = False        # run() is going: the world is the core's, not to be changed

    seed = _setting("seed", "Seeds ECMP hashing, ECN marking and the traffic's random draws.")
    mode = _setting("mode", "\"packet\" or \"flow\".")
    partition_setting = _setting("partition", "`partition` as given ('auto' kept); `partition_level` resolves it.")

    @property
    def partition_level(self) -> str:
        """The level the packet core runs at: "none" (one part), "leaves" or "pods"
        (`partition` as given, 'auto' resolved; a level may give one part, e.g. on a star)."""
        return self.network.partition_level
    scheme = _setting("scheme", "The congestion-control scheme (`rocesim.cc.Scheme`).")
    cc_params = _setting("cc_params", "The scheme's parameters as given and defaulted ('auto' kept).")
    switch = _setting("switch", "The `switch:` settings, resolved.")
    nic = _setting("nic", "The `nic:` settings, resolved (the scheme's NIC defaults under the ones given).")
    deadlock = _setting("deadlock", "The `deadlock:` settings, resolved.")
    nccl = _setting("nccl", "How the nccl_* collective algorithms behave (`rocesim.training.nccl.NcclConfig`).")
    fluid_calibration = _setting("fluid_calibration", "The flow mode's calibration (`flow`): {share, startup (ps), "
                                                      "source: {share, startup}}.")

    @property
    def n_parts(self) -> int:
        """The parts the packet core runs in (1: the engine as always)."""
        return 1 if self.network.parts is None else self.network.parts.n_parts

    @property
    def lookahead_ps(self) -> int:
        """The lookahead of a run in parts: the smallest delay of a link between two parts
        (0 in one part)."""
        return 0 if self.network.parts is None else self.network.parts.lookahead_ps

    # --- traffic -------------------------------------------------------------------

    @property
    def n_nodes(self) -> int:
        """Nodes of the dependency graph added so far: data flows and compute steps (a node's
        id, the id `add_flow` and `add_compute` return, is its row)."""
        return self._nodes.n

    def add_flow(self, src, dst, size, start=0, *, prio=config.DEFAULT_FLOW_PRIORITY,
                 path=None, after=(), delay=0, tag=0, rate=None, connection=None) -> int:
        """Add one flow of `size` bytes from host `src` to host `dst`; returns its id.

        `start` is used when the flow has no parents (`after`); otherwise the flow starts
        `delay` after the last of its parents is done (a data parent when its last byte
        has arrived, a compute parent when its duration has elapsed).  `path` is an
        explicit node list [src, switch, ..., dst] for the data packets.  `rate` (e.g.
        "2Gbps") caps the flow's sending rate whatever the congestion-control scheme says
        (its NIC paces at the lower of the two); its ideal FCT counts the cap.
        `connection` (a whole number >= 0 or a name) puts the flow on a queue pair: the
        flows of one (src, dst) with the same connection ride one, whose 5-tuple
        (`nic.udp_source_port`, `switch.load_balancing.hash_qp`) decides their one ECMP
        path; without it the flow is its own queue pair, hashed from its id.
        """
        self._not_running("add_flow")
        return self._nodes.add_flow(src, dst, size, start, prio=prio, path=path, after=after, delay=delay, tag=tag,
                                    rate=rate, connection=connection)

    def add_compute(self, host, duration, *, after=(), delay=0, start=0, tag=0) -> int:
        """Add a compute step of `duration` on `host` (no packets); returns its id."""
        self._not_running("add_compute")
        return self._nodes.add_compute(host, duration, after=after, delay=delay, start=start, tag=tag)

    def add_flows(self, table, tag=None) -> np.ndarray:
        """Add every flow of a `rocesim.traffic.FlowTable`; returns their ids (its
        `connection` column puts flows on queue pairs, as `add_flow`'s `connection`)."""
        self._not_running("add_flows")
        return self._nodes.add_table(table, tag)

    def add_graph(self, graph) -> int:
        """Append a `rocesim.training.graph.Graph` (flows, compute steps, dependencies); returns the
        id of its node 0 (graph id k becomes flow id offset + k)."""
        self._not_running("add_graph")
        return self._nodes.add_graph(graph)

    def add_collective(self, op, algorithm=None, ranks="all", size="1MB", *, chunks=1,
                       prio=config.DEFAULT_FLOW_PRIORITY, start=0, group_size=None, after=(), pxn=PXN_DEFAULT,
                       job=""):
        """Add a collective (see `rocesim.training.collectives`) on `ranks` (GPU ranks of the
        platform; with a plain topology, hosts; "all" = every rank).

        It starts at `start`, or when every flow id in `after` is done.  `pxn` forwards
        traffic to other rails through the scale-up domain first (rail-aligned, as NCCL's
        PXN; on by default, as in NCCL).  With `nccl.connections: persistent` its flows
        ride the connections of its communicator (its ranks in `job`, for its algorithm),
        shared by every collective of the same communicator.  Returns its
        `CollectiveRecord` (flow ids of its per-rank start and done nodes and its flows).
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
        self.collectives.extend(collectives.batches())
        self.iterations.extend(iterations)
        self.iteration_jobs.update({i: workload.job for i in iterations})
        return TrainingInfo(iterations, collectives)

    def flow_column(self, name: str, copy=True) -> np.ndarray:
        """One column of every node added so far, as a numpy array: src, dst, size (bytes;
        0 for a compute step), duration (ps; a compute step's, 0 for a flow), start, prio,
        compute, delay, tag, dport, collective, iteration, rate_limit, qp (the label of
        the queue pair a flow rides, -1 its own) (`rocesim.world.nodes.COLUMNS`; `copy=False`: a read-only view of the array held
        when there is one)."""
        return self._nodes.column(name, copy)

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
        self._nodes.add_dependencies(children, parents)

    def host(self, h, key: str = "host") -> int:
        """`h` checked as a host id of the topology (ScenarioError naming `key` if not)."""
        return self._nodes.host(h, key)

    def dependency_hosts(self) -> tuple[np.ndarray, np.ndarray]:
        """Per dependency edge added so far, in the order added: the host where its parent
        completes (a data flow's destination, a compute step's own host) and the host where
        its child starts (its source), as two int64 arrays."""
        return self._nodes.dependency_hosts()

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

    def pfc_headroom_needed(self) -> np.ndarray:
        """Per port: the most bytes that can still arrive on one lossless priority after the
        switch decides XOFF for it (numpy int64; what `headroom: auto` guarantees;
        `rocesim.world.pfc.headroom_needed` says how)."""
        return self.network.headroom_needed()

    def _not_running(self, what):
        """Refuse to change the world while run() is going (a scheme's callback calling
        add_flow, say): the core took the flows, dependencies and faults when run() began,
        and the results are read against them."""
        if self._running:
            raise ScenarioError(what, "cannot be called while run() is going (from a congestion-control "
                                      "callback?): the run took its flows and faults when it began; add "
                                      "them before run(), with a later `start` or parents (`after`) to "
                                      "have them begin during it")

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
        core = self.build_core()
        n_threads, note = self.threads_to_run(asked)
        if note is not None and progress is not False:
            print(f"rocesim: {note}", file=sys.stderr)
        sampler = None if interval is None else Sampler(core, interval, self.n_nodes, self.ports, queue_ports)
        show = sys.stderr.isatty() if progress is None else progress
        loop = RunLoop(core, t_stop, t_slice, events_per_slice, sampler=sampler,
                       reroutes=faults_mod.route_updates(self.faults, self.ports),
                       set_routes=lambda core, alive: core_build.set_routes(self.network, core, alive),
                       progress=RunProgress(self.n_nodes, None if stop is None else t_stop,
                                            threads=n_threads) if show else None,
                       n_nodes=self.n_nodes, deadlock_threshold=self.deadlock["threshold"], threads=n_threads)
        self._running = True
        try:
            end = loop.run()
        finally:
            self._running = False
        readout = CoreReadout.of(core)
        samples = None if sampler is None else sampler.tables(self.ports.node)
        del core, loop, sampler           # the core's memory is freed before the results' columns are made
        res = Results.from_core(self.record(), readout, wall_s=end.wall_s, cpu_s=end.cpu_s,
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
        return choose_threads(asked, self.n_parts, python_scheme=self.settings.python_scheme)

    def check(self) -> None:
        """The cross-parameter checks the core would otherwise make first when run() builds
        it: the scheme's parameters finalized against the network (a Swift `fs_min_cwnd`
        above `fs_max_cwnd`, say).  The YAML loader calls it, so `rocesim check` refuses
        what `run` would."""
        empty = Nodes(self.topology, self.ports, self.nic)
        core = Core(*core_build.core_inputs(self.network, empty, self.network.parts))
        core_build.finalized_scheme(self.network, core)

    def core_inputs(self, partition: partition_mod.Partition | None = None) -> tuple[dict, dict]:
        """(the core's arrays, its parameters) as `run` hands them to
        `rocesim._core.engine.Core`, for tests and tools that drive a core themselves; in the
        run's parts, or cut as `partition` (`Simulation.partition`) says."""
        return core_build.core_inputs(self.network, self._nodes, self._cut(partition))

    def build_core(self, partition: partition_mod.Partition | None = None) -> Core:
        """The core as `run` builds it (the scheme installed, monitors and faults set), not
        run: for tests and tools that drive or inspect a core themselves (`Core.run`,
        `Core.stats`, ...).  In the run's parts, or cut as `partition` says."""
        self._not_running("build_core")
        built = core_build.build_core(self.network, self._nodes, self._cut(partition), self.faults)
        self.cc_final = built.cc_final
        return built.core

    def _cut(self, partition):
        """The parts a core is built in: the run's, or `partition`'s (one part: None)."""
        if partition is None:
            return self.network.parts
        if not isinstance(partition, partition_mod.Partition):
            raise ScenarioError("partition", f"expected a Partition (Simulation.partition), got {show(partition)}")
        return partition if partition.n_parts > 1 else None

    def dependencies(self) -> tuple[np.ndarray, np.ndarray]:
        """(child ids, parent ids) of every dependency added so far, in the order added:
        child[i] starts when parent[i] is done."""
        return self._nodes.edge_arrays()

    def flow_path(self, fid: int) -> list[int] | None:
        """The egress port at each hop of flow `fid`'s explicit path (its `path`), or None."""
        return self._nodes.paths.get(fid)

    def record(self) -> RunRecord:
        """What a run of this simulation is made of, as its results read it (frozen when the
        run ends: nothing can be added while it goes)."""
        topo = self.topology
        return RunRecord(scheme=self.scheme.name, mode=self.mode, seed=self.seed, topology=topo.name,
                         hosts=topo.n_hosts, switches=topo.n_switches, original_ids=np.asarray(topo.original_ids),
                         port_node=self.ports.node, port_peer=self.ports.peer, port_rate_bps=self.ports.rate_bps,
                         port_tier=self.network.port_tier,
                         faults=[f.record() for f in self.faults], partition=self.partition_level,
                         parts=self.n_parts, lookahead_ps=self.lookahead_ps,
                         fluid_calibration=self.fluid_calibration,
                         delivery=self.nic["delivery"], multipath=self.network.multipath,
                         collectives=self.collectives, iteration_jobs=dict(self.iteration_jobs),
                         node_column=lambda name: self._nodes.column(name, copy=False))
