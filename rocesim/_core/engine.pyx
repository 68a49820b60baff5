# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The Python-facing `Core`: build the C world once, run, read back.

Python (rocesim.simulation) flattens topology, routes and flows into numpy arrays;
`Core` checks every index that reaches C, copies them into C structs, and runs the
event loop (loop.pyx) in slices (`run(until_ps, max_events)`) so that Python can show
progress, sample, or stop on Ctrl-C between slices.  Results come back as numpy
arrays.
"""
import numpy as np
cimport numpy as cnp
from rocesim._core import params as core_params
from libc.stdint cimport int64_t, int32_t, uint32_t, uint64_t, INT64_MAX
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memset, memcpy
from rocesim._core.growth cimport zeroed_lines
from cpython.pycapsule cimport PyCapsule_New
from rocesim._core.defs cimport (Sim, World, Stats, Event, Packet, Port, Switch, Host, Flow, Qp, LossState, LossRec,
                                 RouteGroup, NetParams, Handoff, NIL, UNORDERED, NPRIO, ERR_NONE, ERR_CALLBACK,
                                 ERR_NOMEM, FS_WAITING, FS_DONE)
from rocesim._core.pool cimport pool_init, pool_release_array
from rocesim._core.events cimport (ev_init, ev_free, ev_bytes, ev_bucket_shift, PART_WIDER,
                                   ev_calendar_size, CAL_N, CAL_MIN)
from rocesim._core.rng cimport mix64
from rocesim._core.routing cimport key_hash, key_rhash
from rocesim._core.cc cimport cc_ops_clear
from rocesim._core.loss cimport loss_free
from rocesim._core.qp cimport qp_at, rx_of, qp_pool_release
from rocesim._core.flows cimport flows_next_root, flow_ideal_fct, flow_top_switch, flow_base_rtt, pair_base_rtt
from rocesim._core cimport loop
from rocesim._core.window cimport (Windows, windows_init, windows_free, windows_set_tiers, windows_run,
                                   windows_next, windows_idle, windows_pending, windows_max_threads)
from rocesim._core.deadlock cimport DLState, DLRecord, deadlock_init, deadlock_free, deadlock_at_stall
from rocesim._core.faults cimport Fault, faults_init, faults_free, F_NIC_STOP, F_NIC_RESUME, F_LINK_RATE
from rocesim._core.watchdog cimport watchdog_init, watchdog_free
from rocesim._core.fluid cimport fluid_init, fluid_free, fluid_loop, fluid_split_at
from rocesim._core.nic_send cimport nic_on_ack, nic_on_unordered_ack
from rocesim._core.entropy cimport entropy_state_size

cnp.import_array()
if core_params.NPRIO != NPRIO:
    raise ImportError(f"rocesim core: params.NPRIO {core_params.NPRIO} is not defs.pxd's {NPRIO}")

cdef extern from *:
    """
    #if defined(__GLIBC__)
    #include <malloc.h>
    static void rocesim_malloc_trim(void) { malloc_trim(0); }
    #else
    static void rocesim_malloc_trim(void) {}
    #endif
    """
    void rocesim_malloc_trim() nogil

PACKET_BYTES = sizeof(Packet)        # the hot packet record: one cache line (defs.pxd)
PORT_BYTES = sizeof(Port)            # nine cache lines, the hot one first
FLOW_BYTES = sizeof(Flow)            # per flow for the whole run, started or not
QP_BYTES = sizeof(Qp)                # per active data flow (plus its scheme's state)
EVENT_BYTES = sizeof(Event)          # events.pxd places 4-child groups on cache lines for 32
MAX_THREADS = windows_max_threads()   # threads a run in parts can use (1: built without OpenMP)
STOP_EMPTY = loop.STOP_EMPTY        # why Core.run returned (see loop.pxd)
STOP_TIME = loop.STOP_TIME
STOP_EVENTS = loop.STOP_EVENTS
STOP_DEADLOCK = loop.STOP_DEADLOCK

cdef enum:
    INITIAL_POOL = 4096
    PART_POOL = 256          # the first packets of a part other than part 0 (plan, 1.1)


# --- parts (issue 20) ------------------------------------------------------------------
# A Core holds its run in parts: `Sim` contexts that share one `World` (the network, the
# flows, the parameters, the scheme: defs.pxd) by a pointer and have each their own queue,
# pools, counters, RNG, timeline, losses, roots, clock and error.  The Core owns the world
# and every part.  With one part (the default) Core.run is the event loop on part 0; with
# several (world "part_of_node", from rocesim.network.partition) it runs them in windows
# (window.pyx).

cdef uint64_t _part_rng(uint64_t seed, int32_t k) noexcept:
    """Part k's RNG stream: part 0's is the single engine's, the others mixed from it."""
    cdef uint64_t r = mix64(seed ^ <uint64_t> 0x5DEECE66D)
    return r if k == 0 else mix64(r ^ <uint64_t> k)


cdef int _init_part(Sim* s, int32_t k, uint64_t seed, int32_t pool) noexcept:
    """Give part k its own empty state (its world already set): the event queue, a pool of
    `pool` packets, an empty queue-pair pool, its RNG; -1 if out of memory.  Counters,
    timeline, losses and roots start zeroed (calloc).  A part other than part 0 gets the
    fewest calendar buckets: Core._cut sizes its calendar for its ports."""
    s.part = k
    s.qp_free = NIL
    s.rng = _part_rng(seed, k)
    if ev_init(s, ev_bucket_shift(s.w.n_ports), CAL_N if k == 0 else CAL_MIN) < 0 or pool_init(s, pool) < 0:
        return -1
    return 0


cdef void _free_part(Sim* s) noexcept:
    """Free what part `s` holds of its own (not the world)."""
    cdef int32_t i
    for i in range(s.qp_cap):
        loss_free(qp_at(s, i))
    for i in range(s.n_qp_chunks):
        free(s.qp_chunks[i])
    free(s.qp_chunks)
    free(s.losses)
    ev_free(s)
    pool_release_array(s)
    free(s.int_hops)
    free(s.pkt_sack)
    free(s.start_order)
    free(s.tl)
    free(s.sent)
    free(s.deps)


cdef void _free_world(World* w) noexcept:
    """Free the world's arrays (not the parts, nor the monitors' and faults' state)."""
    cdef int32_t i, k
    if w.hosts != NULL:
        for i in range(w.n_hosts):
            free(w.hosts[i].active)
            free(w.hosts[i].ready_bits)
            free(w.hosts[i].ready_sum)
            for k in range(NPRIO):
                free(w.hosts[i].paced[k])
            free(w.hosts[i].pull_flows)
    free(w.flow_path_off)
    free(w.flow_rate_limit)
    free(w.flow_hash)
    free(w.flow_rhash)
    free(w.flow_rx)
    free(w.ports)
    if w.sw != NULL:
        for i in range(w.n_nodes - w.n_hosts):
            free(w.sw[i].lb_state)
    free(w.sw)
    free(w.hosts)
    free(w.flows)
    free(w.route_groups)
    free(w.route_ports)
    free(w.route_class)
    free(w.path_ports)
    free(w.child_idx)
    for i in range(w.n_handoff):
        free(w.handoff[i].pk)
        free(w.handoff[i].hops)
        free(w.handoff[i].sack)
    free(w.handoff)
    free(w.node_part)


def _as(a, dtype, name, n=None):
    arr = np.ascontiguousarray(a, dtype=dtype)
    if arr.ndim != 1:
        raise ValueError(f"core input {name!r} must be one-dimensional")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"core input {name!r} has {arr.shape[0]} entries, expected {n}")
    return arr


def _check_range(arr, lo, hi, name):
    if arr.shape[0] and (arr.min() < lo or arr.max() >= hi):
        raise ValueError(f"core input {name!r} has values outside [{lo}, {hi})")


def _route_arrays(int H, int N, int P, route_off, route_cnt, route_ports, route_class):
    """Validated routing tables (see rocesim.network.routing.RouteTables): the destination class
    of each host (default: one class per host), the class count, and the CSR arrays."""
    if route_class is None:
        route_class = np.arange(H, dtype=np.int32)
    route_class = _as(route_class, np.int32, "route_class", H)
    n_classes = int(route_class.max()) + 1 if H else 0
    _check_range(route_class, 0, max(n_classes, 1), "route_class")
    route_off = _as(route_off, np.int32, "route_off", (N - H) * n_classes)
    route_cnt = _as(route_cnt, np.int32, "route_cnt", (N - H) * n_classes)
    route_ports = _as(route_ports, np.int32, "route_ports")
    _check_range(route_ports, 0, P, "route_ports")
    if route_cnt.shape[0]:
        # cnt -1: direct delivery, the port is route_ports[off + dst] for dst < H
        span = np.where(route_cnt < 0, H, route_cnt).astype(np.int64)
        if (route_cnt.min() < -1 or route_off.min() < 0
                or (route_off.astype(np.int64) + span).max() > route_ports.shape[0]):
            raise ValueError("core input 'route_off'/'route_cnt' point outside 'route_ports'")
    groups = np.stack([route_off, route_cnt], axis=1).ravel()     # RouteGroup {off, cnt} pairs
    return route_class, n_classes, groups, route_ports


def _network_columns(dict world):
    """The network's columns of `world` (ports, hosts, switches, routes, explicit paths),
    checked: types, lengths, ranges, the pairing of ports."""
    H, N = int(world["n_hosts"]), int(world["n_nodes"])
    if H <= 0 or N < H:
        raise ValueError("core needs at least one host and n_nodes >= n_hosts")
    port_node = _as(world["port_node"], np.int32, "port_node")
    P = port_node.shape[0]
    net = dict(n_hosts=H, n_nodes=N, port_node=port_node,
               port_peer=_as(world["port_peer"], np.int32, "port_peer", P),
               port_rate=_as(world["port_rate_bps"], np.int64, "port_rate_bps", P),
               port_delay=_as(world["port_delay_ps"], np.int64, "port_delay_ps", P),
               port_headroom=_as(world["port_headroom"], np.int64, "port_headroom", P),
               port_shift=_as(world["port_pfc_shift"], np.int32, "port_pfc_shift", P),
               port_kmin=_as(world["port_kmin"], np.int64, "port_kmin", P),
               port_kmax=_as(world["port_kmax"], np.int64, "port_kmax", P),
               port_pmax=_as(world["port_pmax"], np.float64, "port_pmax", P),
               port_uplink=_as(world.get("port_uplink", np.zeros(P)), np.int32, "port_uplink", P),
               host_port=_as(world["host_port"], np.int32, "host_port", H),
               switch_buffer=_as(world["switch_buffer"], np.int64, "switch_buffer", N - H),
               path_ports=_as(world.get("path_ports", np.zeros(0)), np.int32, "path_ports"))
    net["route_class"], net["n_classes"], net["route_groups"], net["route_ports"] = _route_arrays(
        H, N, P, world["route_off"], world["route_cnt"], world["route_ports"], world.get("route_class"))
    port_peer, host_port = net["port_peer"], net["host_port"]
    _check_range(port_node, 0, N, "port_node")
    _check_range(port_peer, 0, P, "port_peer")
    _check_range(host_port, 0, P, "host_port")
    _check_range(net["path_ports"], 0, P, "path_ports")
    _check_range(net["port_shift"], 0, 63, "port_pfc_shift")
    if P and net["port_rate"].min() <= 0:
        raise ValueError("core input 'port_rate_bps' must be positive")
    if P and net["port_delay"].min() < 0:
        raise ValueError("core input 'port_delay_ps' must be >= 0")
    if not np.array_equal(port_peer[port_peer], np.arange(P, dtype=np.int32)):
        raise ValueError("core input 'port_peer' is not a pairing of ports")
    if not np.array_equal(port_node[host_port], np.arange(H, dtype=np.int32)):
        raise ValueError("core input 'host_port' does not match 'port_node'")
    return net


def _flow_columns(dict world, int H, int n_path_ports):
    """The flows' columns of `world`, checked (types, lengths, ranges, the dependency graph)
    and made ready for the flow records: the children in flow order, each flow's `due`
    (its start without parents, else its delay) and the roots in start order."""
    src = _as(world["flow_src"], np.int32, "flow_src")
    F = src.shape[0]
    c = dict(src=src, dst=_as(world["flow_dst"], np.int32, "flow_dst", F),
             size=_as(world["flow_size"], np.int64, "flow_size", F),
             prio=_as(world["flow_prio"], np.int32, "flow_prio", F),
             path_off=_as(world.get("flow_path_off", np.full(F, -1)), np.int32, "flow_path_off", F),
             is_compute=_as(world.get("flow_is_compute", np.zeros(F)), np.int32, "flow_is_compute", F),
             n_parents=_as(world.get("flow_n_parents", np.zeros(F)), np.int32, "flow_n_parents", F),
             rate_limit=_as(world.get("flow_rate_limit", np.zeros(F)), np.int64, "flow_rate_limit", F))
    for name in ("flow_hash", "flow_rhash"):      # queue pairs' 5-tuple hashes (optional, both or none)
        c[name] = None if world.get(name) is None else _as(world[name], np.uint32, name, F)
    if (c["flow_hash"] is None) != (c["flow_rhash"] is None):
        raise ValueError("core input: 'flow_hash' and 'flow_rhash' go together")
    start = _as(world["flow_start"], np.int64, "flow_start", F)
    delay = _as(world.get("flow_delay", np.zeros(F)), np.int64, "flow_delay", F)
    size, path_off, data = c["size"], c["path_off"], c["is_compute"] == 0
    _check_range(src, 0, H, "flow_src")
    _check_range(c["dst"], 0, H, "flow_dst")
    _check_range(c["prio"][data], 1, NPRIO, "flow_prio (data flows use priorities 1..7)")
    if F and ((size[data] <= 0).any() or (size < 0).any() or start.min() < 0 or delay.min() < 0):
        raise ValueError("core input: data sizes must be positive, compute durations, starts "
                         "and delays >= 0")
    if F and c["rate_limit"].min() < 0:
        raise ValueError("core input 'flow_rate_limit' must be >= 0 (0: no limit)")
    if np.any(data & (src == c["dst"])):
        raise ValueError("core input: a data flow has src == dst")
    if F and (path_off.max() >= n_path_ports or path_off.min() < -1):
        raise ValueError("core input 'flow_path_off' points outside 'path_ports'")
    c["child_off"], c["child_idx"] = _children(world, F, c["n_parents"])
    roots = np.flatnonzero(c["n_parents"] == 0).astype(np.int32)
    c["roots"] = roots[np.argsort(start[roots], kind="stable")].astype(np.int32)
    c["due"] = np.where(c["n_parents"] == 0, start, delay).astype(np.int64, copy=False)
    return c


def _children(dict world, int F, n_parents):
    """The dependency graph's children, checked, in flow order: (child_off [F + 1],
    child_idx), flow f's children being child_idx[child_off[f] .. child_off[f + 1]]."""
    child_off = _as(world.get("flow_child_off", np.zeros(F)), np.int32, "flow_child_off", F)
    n_children = _as(world.get("flow_n_children", np.zeros(F)), np.int32, "flow_n_children", F)
    child_idx = _as(world.get("child_idx", np.zeros(0)), np.int32, "child_idx")
    _check_range(child_idx, 0, F, "child_idx")
    if F and ((child_off.astype(np.int64) + n_children).max() > child_idx.shape[0]
              or child_off.min() < 0 or n_children.min() < 0):
        raise ValueError("core input 'flow_child_off'/'flow_n_children' point outside 'child_idx'")
    ends = np.cumsum(n_children, dtype=np.int64)
    if not np.array_equal(child_off, ends - n_children):    # (Simulation gives them in flow order)
        child_idx = child_idx[np.repeat(child_off.astype(np.int64) - (ends - n_children), n_children)
                              + np.arange(ends[F - 1] if F else 0)].astype(np.int32)
    else:
        child_idx = child_idx[:ends[F - 1] if F else 0]
    if not np.array_equal(np.bincount(child_idx, minlength=F)[:F], n_parents):
        raise ValueError("core input 'flow_n_parents' does not match 'child_idx'")
    return np.concatenate([[0], ends]).astype(np.int32), child_idx


cdef class Core:
    """The simulated network in C.  Build it with `rocesim.Simulation`, not directly.

    `world` is a dict of numpy arrays (ports, switches, routes, flows) and `params`
    a dict of scalars; the constructor validates every index before copying.
    """
    def __cinit__(self):
        cdef World* w = <World*> calloc(1, sizeof(World))
        cdef Sim* s = <Sim*> calloc(1, sizeof(Sim))
        cdef Sim** parts = <Sim**> calloc(1, sizeof(Sim*))
        if w == NULL or s == NULL or parts == NULL:
            free(w)
            free(s)
            free(parts)
            raise MemoryError()
        self.w, self.s = w, s
        s.w = w
        w.parts = parts
        w.parts[0] = s
        w.n_parts = 1
        cc_ops_clear(&w.cc)               # no scheme installed: every callback a no-op
        s.qp_free = NIL
        self.win.open_end = -1

    @property
    def n_parts(self):
        """The parts the run is cut into (world "part_of_node"; 1 by default)."""
        return self.w.n_parts

    def __init__(self, dict world, dict params):
        net = _network_columns(world)
        self.seed = <uint64_t> int(params["seed"])
        self._init_params(params)
        self._init_network(net, params["shared_hash_seed"])
        self._install_routes(net["route_class"], net["n_classes"], net["route_groups"], net["route_ports"])
        self.w.path_ports = _copy_i32(net["path_ports"])
        self.w.n_path_ports = net["path_ports"].shape[0]
        self._init_flows(_flow_columns(world, self.w.n_hosts, self.w.n_path_ports))
        if _init_part(self.s, 0, self.seed, INITIAL_POOL) < 0:
            raise MemoryError()
        if params["fluid"]:
            self._init_fluid(params)
        if world.get("part_of_node") is not None:
            self._cut(world["part_of_node"], world.get("part_tier"), int(params.get("lookahead_ps", 0)),
                      net["port_node"], net["port_peer"], net["port_delay"])
        for k in range(self.w.n_parts):
            flows_next_root(self.w.parts[k])

    cdef _init_network(self, dict net, bint shared_seed):
        """The ports, switches and hosts from the checked columns of `_network_columns` (the
        parameters already set: a switch totals its ports' reserves); with `shared_seed`
        every switch's ECMP seed is the same."""
        cdef World* w = self.w
        cdef int32_t i, k, H = net["n_hosts"], N = net["n_nodes"], P = net["port_node"].shape[0]
        cdef Port* p
        cdef Switch* sw
        cdef const int32_t[::1] node = net["port_node"], peer = net["port_peer"], shift = net["port_shift"]
        cdef const int32_t[::1] uplink = net["port_uplink"], host_port = net["host_port"]
        cdef const int64_t[::1] rate = net["port_rate"], delay = net["port_delay"], headroom = net["port_headroom"]
        cdef const int64_t[::1] kmin = net["port_kmin"], kmax = net["port_kmax"], buffer = net["switch_buffer"]
        cdef const double[::1] pmax = net["port_pmax"]
        w.n_hosts, w.n_nodes, w.n_ports = H, N, P
        w.ports = <Port*> zeroed_lines(max(P, 1) * sizeof(Port))
        w.sw = <Switch*> zeroed_lines(max(N - H, 1) * sizeof(Switch))
        w.hosts = <Host*> zeroed_lines(max(H, 1) * sizeof(Host))
        if w.ports == NULL or w.sw == NULL or w.hosts == NULL:
            raise MemoryError()
        for i in range(N - H):
            w.sw[i].node = H + i
            w.sw[i].buffer = buffer[i]
            w.sw[i].port_off = NIL
            # (`hash_seed: shared`: every switch hashes alike, a flow's choice repeats tier after tier)
            w.sw[i].seed = <uint32_t> mix64(self.seed * 1000003 + <uint64_t> (0 if shared_seed else i))
        for i in range(P):
            p = &w.ports[i]
            p.node = node[i]
            p.peer = peer[i]
            p.peer_node = node[peer[i]]
            p.is_switch = p.node >= H
            p.rate_bps = rate[i]
            p.delay_ps = delay[i]
            p.tx_event = p.handoff = p.wire_head = p.wire_tail = NIL
            for k in range(NPRIO):
                p.q_head[k] = NIL
                p.q_tail[k] = NIL
            p.headroom = headroom[i]
            p.pfc_shift = shift[i]
            p.kmin = kmin[i]
            p.kmax = kmax[i] if kmax[i] > kmin[i] else kmin[i] + 1
            p.pmax = pmax[i]
            p.uplink = uplink[i] != 0
            if p.is_switch:
                sw = &w.sw[p.node - H]
                sw.n_ports += 1
                sw.total_hdrm += p.headroom
                sw.total_rsrv += w.p.reserve      # per port, as the HPCC fork totals it
        for i in range(H):
            w.hosts[i].port = host_port[i]

    cdef _install_routes(self, route_class, int32_t n_classes, route_groups, route_ports):
        """The routing tables (checked by _route_arrays), in place of those before."""
        cdef World* w = self.w
        cdef int32_t* groups = _copy_i32(route_groups)
        cdef int32_t* ports
        cdef int32_t* cls
        try:
            ports = _copy_i32(route_ports)
        except MemoryError:
            free(groups)
            raise
        try:
            cls = _copy_i32(route_class)
        except MemoryError:
            free(groups)
            free(ports)
            raise
        free(w.route_groups)
        free(w.route_ports)
        free(w.route_class)
        w.route_groups, w.route_ports, w.route_class = <RouteGroup*> groups, ports, cls
        w.n_route_classes = n_classes

    cdef _cut(self, part_of_node, part_tier, int64_t lookahead, port_node, port_peer, port_delay):
        """Cut the run into parts (issue 20): `part_of_node` [n_nodes] gives each node's part
        (rocesim.network.partition), `lookahead` (ps) is at most the delay of every port whose
        link joins two parts, `part_tier` [n_parts] (or None: all 0) says how the threads
        share the parts out (Partition.tiers).  Builds parts 1.., the hand-off records of the cut ports,
        each part's incoming cut ports and roots (those of its hosts, in start order), and
        the receive records.  One part: nothing changes."""
        cdef Sim* s = self.s
        cdef World* w = self.w
        cdef int32_t n, k, m, q, shift
        pon = np.array(_as(part_of_node, np.int32, "part_of_node", w.n_nodes))    # (a writable copy)
        n = int(pon.max()) + 1
        _check_range(pon, 0, n, "part_of_node")
        if n == 1:
            return
        tier_arr = np.zeros(n, np.int32) if part_tier is None else _as(part_tier, np.int32, "part_tier", n)
        if w.fluid != NULL:
            raise ValueError("core input 'part_of_node': flow mode runs in one part")
        cut = pon[port_node] != pon[port_node[port_peer]]
        if lookahead <= 0 or (cut.any() and port_delay[cut].min() < lookahead):
            raise ValueError("core params: lookahead_ps must be positive and at most the delay of every cut port")
        for k in range(1, n):
            self._add_part()
        if windows_init(&self.win, n, lookahead) < 0:
            raise MemoryError()
        cdef int32_t[::1] tiers = tier_arr
        windows_set_tiers(&self.win, n, &tiers[0])
        # a dependency whose child starts in another part than where its parent completes
        # is a message (flows.pyx, window.pyx), a link fault is applied by each end's part
        # (faults.pyx), the monitors act on each port in its part (monitors.pyx): every
        # part knows the nodes' parts and L
        w.node_part = _copy_i32(pon)
        w.lookahead = lookahead
        # the hand-off records, by cut port id; room in each part's list of those it writes
        cut_ids = np.flatnonzero(cut).astype(np.int32)
        w.handoff = <Handoff*> zeroed_lines(max(cut_ids.shape[0], 1) * sizeof(Handoff))
        if w.handoff == NULL:
            raise MemoryError()
        w.n_handoff = cut_ids.shape[0]
        for m in range(w.n_handoff):
            q = cut_ids[m]
            w.handoff[m].port = q
            w.handoff[m].peer = port_peer[q]
            w.ports[q].cut = 1
            w.ports[q].handoff = m
        sending = np.bincount(pon[port_node[cut_ids]], minlength=n)     # cut ports per part
        cdef int32_t[::1] part_of = pon
        cdef cnp.ndarray[int32_t] roots = np.empty(s.n_roots, np.int32)
        cdef cnp.ndarray[int32_t] root_part = np.empty(s.n_roots, np.int32)
        for m in range(s.n_roots):                  # each root's source host's part
            roots[m] = s.start_order[m]
            root_part[m] = part_of[w.flows[roots[m]].src]
        for k in range(n):
            free(self.w.parts[k].sent)
            self.w.parts[k].sent = <int32_t*> malloc(max(int(sending[k]), 1) * sizeof(int32_t))
            if self.w.parts[k].sent == NULL:
                raise MemoryError()
            self.w.parts[k].n_sent = 0
            own = roots[root_part == k]
            free(self.w.parts[k].start_order)
            self.w.parts[k].start_order = _copy_i32(own)
            self.w.parts[k].n_roots = own.shape[0]
            self.w.parts[k].next_root = 0
            # a part's calendar buckets sized for its own ports (events.pxd: the order of
            # events does not depend on it), not the network's: fewer buckets in use; and as
            # few of them as look as far ahead as the network's calendar would: its memory
            # follows the part's size
            ev_free(self.w.parts[k])
            shift = ev_bucket_shift(np.count_nonzero(pon[port_node] == k), PART_WIDER)
            if ev_init(self.w.parts[k], shift, ev_calendar_size(shift, ev_bucket_shift(w.n_ports))) < 0:
                raise MemoryError()
        self._alloc_flow_rx()

    cdef _init_fluid(self, dict params):
        """Flow mode: data flows as fluids (fluid.pyx) instead of packets."""
        if fluid_init(self.s, params["fluid_share"], params["fluid_startup_ps"]) < 0:
            raise MemoryError()

    cdef _init_params(self, dict params):
        """The network's parameters (NetParams) from `params`, one field per row of params.NET,
        each checked against its row's range first."""
        core_params.check(params)
        self.w.p = params
        core_params.check_fields(self.w.p)
        self.w.on_ack = nic_on_unordered_ack if self.w.p.delivery == UNORDERED else nic_on_ack
        self.w.entropy_state_size = entropy_state_size(self.w.p.entropy)

    cdef _init_flows(self, dict c):
        """The flow records and per-flow arrays, and part 0's roots, from the checked columns
        of `_flow_columns`."""
        cdef World* w = self.w
        cdef int32_t F = c["src"].shape[0], i
        cdef Flow* fl
        cdef const int32_t[::1] src_v = c["src"], dst_v = c["dst"], prio_v = c["prio"], compute_v = c["is_compute"]
        cdef const int32_t[::1] parents_v = c["n_parents"], child_off_v = c["child_off"]
        cdef const int64_t[::1] due_v = c["due"], size_v = c["size"]
        cdef const int64_t[::1] limit_v = c["rate_limit"]
        w.n_flows = F
        w.flows = <Flow*> calloc(F + 1, sizeof(Flow))     # and the sentinel (Flow.child_off)
        if w.flows == NULL:
            raise MemoryError()
        for i in range(F):
            fl = &w.flows[i]
            fl.src = src_v[i]
            fl.dst = dst_v[i]
            fl.prio = prio_v[i]
            fl.state = FS_WAITING
            fl.qp = NIL
            fl.due = due_v[i]
            fl.size = size_v[i]           # a compute step's duration (Flow.size)
            fl.released = fl.finish = fl.rx_finish = NIL
            fl.is_compute = compute_v[i]
            fl.slot.deps_left = parents_v[i]
            fl.child_off = child_off_v[i]
        w.flows[F].child_off = child_off_v[F]
        w.flows[F].qp = NIL
        if (c["path_off"] >= 0).any():
            w.flow_path_off = _copy_i32(c["path_off"])
        if c["flow_hash"] is not None:
            w.flow_hash = _copy_u32(c["flow_hash"])
            w.flow_rhash = _copy_u32(c["flow_rhash"])
        if (c["rate_limit"] > 0).any():
            w.flow_rate_limit = <int64_t*> malloc(F * sizeof(int64_t))
            if w.flow_rate_limit == NULL:
                raise MemoryError()
            for i in range(F):
                w.flow_rate_limit[i] = limit_v[i]
        w.child_idx = _copy_i32(c["child_idx"])
        self.s.start_order = _copy_i32(c["roots"])
        self.s.n_roots = c["roots"].shape[0]
        self.s.next_root = 0

    def __dealloc__(self):
        cdef World* w = self.w
        cdef int32_t k
        windows_free(&self.win)
        if w == NULL:
            return                    # (out of memory in __cinit__: nothing built)
        # the world's monitors and faults, the scheme's state, each part's own state, the
        # world's arrays: each freed once
        if w.cc.free_state != NULL:
            w.cc.free_state(w.cc.state)
        deadlock_free(self.s)
        fluid_free(self.s)
        faults_free(self.s)
        watchdog_free(self.s)
        for k in range(w.n_parts):
            _free_part(w.parts[k])
            free(w.parts[k])
        _free_world(w)
        free(w.parts)
        free(w)

    cdef _add_part(self):
        """One more part, k = n_parts: a Sim of the world with its own empty queue, pools,
        counters, RNG stream and timeline."""
        cdef int32_t k = self.w.n_parts
        cdef Sim** grown = <Sim**> realloc(self.w.parts, (k + 1) * sizeof(Sim*))
        cdef Sim* p
        if grown == NULL:
            raise MemoryError()
        self.w.parts = grown
        p = <Sim*> calloc(1, sizeof(Sim))
        if p == NULL:
            raise MemoryError()
        p.w = self.w
        if _init_part(p, k, self.seed, PART_POOL) < 0:
            _free_part(p)
            free(p)
            raise MemoryError()
        self.w.parts[k] = p
        self.w.n_parts = k + 1

    cdef _alloc_flow_rx(self):
        """Receivers keep their own records (World.flow_rx), none open yet."""
        cdef int32_t f
        self.w.flow_rx = <int32_t*> malloc(max(self.w.n_flows, 1) * sizeof(int32_t))
        if self.w.flow_rx == NULL:
            raise MemoryError()
        for f in range(self.w.n_flows):
            self.w.flow_rx[f] = NIL

    cdef Sim* _rx_part(self, int32_t f) noexcept:
        """The part of flow f's receiver."""
        return self.w.parts[self.w.node_part[self.w.flows[f].dst]] if self.w.node_part != NULL else self.s

    def window_stats(self):
        """A run in parts: its parts, lookahead (ps), windows closed (and those in which some
        part ran an event), packets handed from part to part over cut links, and dependency
        messages (a parent completed in one part, its child starts in another)."""
        return dict(parts=self.w.n_parts, lookahead_ps=self.win.lookahead if self.w.n_parts > 1 else 0,
                    windows=self.win.windows, busy_windows=self.win.busy_windows, handoffs=self.win.handoffs,
                    cut_ports=self.w.n_handoff, dependency_messages=self.win.deps)

    def thread_stats(self):
        """The threads the run used so far: `threads_mean` (over its windows' wall time) and
        `threads_final` (the last window's); 1 with one part.  Unlike every other readback
        they depend on the threads asked and on the machine's load, never the results."""
        if self.w.n_parts == 1 or self.win.tc.wall == 0:
            now = max(1, self.win.tc.now) if self.w.n_parts > 1 else 1
            return dict(threads_mean=float(now), threads_final=now)
        return dict(threads_mean=self.win.tc.threads_wall / self.win.tc.wall, threads_final=self.win.tc.now)

    def window_profile(self, bint record=True):
        """A run in parts, for the parallel core's scaling model (validation/parallel_model.py):
        with `record`, every window from now on records, per part that ran events or took
        hand-offs in it, (window index, part, events run, hand-offs taken); returns what
        was recorded so far as int64 arrays `window`, `part`, `events`, `handoffs`.  The
        records do not depend on the threads (the windows and parts' work do not)."""
        cdef int64_t n = self.win.n_profile if self.win.profile != NULL else 0
        cdef int64_t[:, ::1] view
        self.win.profiling = record and self.w.n_parts > 1
        rec = np.zeros((n, 4), np.int64)
        if n:
            view = rec
            memcpy(&view[0, 0], self.win.profile, n * 4 * sizeof(int64_t))
        return dict(window=rec[:, 0], part=rec[:, 1], events=rec[:, 2], handoffs=rec[:, 3])

    def cut_ports(self):
        """Which ports are cut (a bool per port): a run in parts, their links join two parts."""
        return np.array([self.w.ports[k].cut for k in range(self.w.n_ports)], bool)

    def capsule(self):
        """A PyCapsule of the C `Sim*`, for congestion-control modules' `install`."""
        return PyCapsule_New(<void*> self.s, b"rocesim.Sim", NULL)

    def install_scheme(self, module, dict params, bint needs_cnp=False):
        """Install a congestion-control scheme: `module.install(core, params)`.

        `needs_cnp`: receivers answer ECN-marked data with CNPs (the scheme's declaration).
        Whatever `install` returns is kept alive as long as this Core (Python schemes).
        """
        if self.stats()["queue_pairs_peak"]:
            raise ValueError("install_scheme: the run has started; install the scheme before it")
        if self.w.cc.free_state != NULL:
            self.w.cc.free_state(self.w.cc.state)
        cc_ops_clear(&self.w.cc)
        self._scheme = module.install(self, params)
        self.w.cc.needs_cnp = needs_cnp

    @property
    def needs_cnp(self):
        """Whether receivers answer ECN-marked data with CNP packets (the installed scheme's
        declaration); else congestion notifications reach senders as ACKs' ECN echo."""
        return bool(self.w.cc.needs_cnp)

    def split_in_fluid(self, switches):
        """Flow mode: the fluid splits every flow evenly over the equal-cost ports of these
        switches (indices 0..n_switches-1), where the load-balancing scheme spreads a flow's
        packets (a scheme's declared `fluid` way, rocesim.lb)."""
        cdef int32_t k
        if self.w.fluid == NULL:
            raise ValueError("split_in_fluid: the core is not in flow mode")
        for k in switches:
            if not 0 <= k < self.w.n_nodes - self.w.n_hosts:
                raise ValueError(f"split_in_fluid: no switch {k}")
            if fluid_split_at(self.s, k) < 0:
                raise MemoryError()

    def enable_deadlock_detection(self, int64_t interval_ps, int64_t threshold_ps, bint stop=False):
        """Check for PFC deadlocks every `interval_ps` (deadlock.pyx); before the run starts."""
        if interval_ps <= 0 or threshold_ps < 0:
            raise ValueError("deadlock detection: interval must be positive, threshold >= 0")
        if self.w.deadlock != NULL:
            raise ValueError("deadlock detection is already on")
        if deadlock_init(self.s, interval_ps, threshold_ps, stop) < 0:
            deadlock_free(self.s)
            raise MemoryError()

    def set_faults(self, time_ps, kind, target, value):
        """Schedule faults (faults.pyx): arrays of time, kind (F_*), target (a host for NIC
        kinds, a port for link kinds) and value (bit/s for a rate change; bytes a stopped
        NIC still takes in).  Once, before the run starts."""
        cdef int32_t n, k
        cdef Fault* buf
        time_ps = _as(time_ps, np.int64, "fault_time")
        n = time_ps.shape[0]
        kind = _as(kind, np.int32, "fault_kind", n)
        target = _as(target, np.int32, "fault_target", n)
        value = _as(value, np.int64, "fault_value", n)
        if self.w.faults != NULL:
            raise ValueError("faults are already scheduled")
        _check_range(kind, 0, 5, "fault_kind")
        nic = (kind == F_NIC_STOP) | (kind == F_NIC_RESUME)
        _check_range(target[nic], 0, self.w.n_hosts, "fault_target (hosts)")
        _check_range(target[~nic], 0, self.w.n_ports, "fault_target (ports)")
        if n and (time_ps.min() < self.now_ps or value.min() < 0
                  or (value[kind == F_LINK_RATE] <= 0).any()):
            raise ValueError("core input: fault times must not be in the past, values >= 0, rates > 0")
        buf = <Fault*> malloc(max(n, 1) * sizeof(Fault))
        if buf == NULL:
            raise MemoryError()
        for k in range(n):
            buf[k].time = time_ps[k]
            buf[k].kind = kind[k]
            buf[k].target = target[k]
            buf[k].value = value[k]
        k = faults_init(self.s, buf, n)
        free(buf)
        if k < 0:
            raise MemoryError()

    def enable_watchdog(self, int64_t interval_ps, int64_t detection_ps, int64_t restoration_ps,
                        int32_t action):
        """The PFC watchdog on every switch port (watchdog.pyx); action 0 drop, 1 forward."""
        if interval_ps <= 0 or detection_ps < 0 or restoration_ps < 0 or action not in (0, 1):
            raise ValueError("watchdog: interval must be positive, times >= 0, action 0 or 1")
        if self.w.watchdog != NULL:
            raise ValueError("the watchdog is already on")
        if watchdog_init(self.s, interval_ps, detection_ps, restoration_ps, action) < 0:
            watchdog_free(self.s)
            raise MemoryError()

    def set_routes(self, route_off, route_cnt, route_ports, route_class=None):
        """Replace the routing tables (after a link went down or came back up)."""
        route_class, n_classes, route_groups, route_ports = _route_arrays(
            self.w.n_hosts, self.w.n_nodes, self.w.n_ports, route_off, route_cnt, route_ports, route_class)
        self._install_routes(route_class, n_classes, route_groups, route_ports)

    def deadlock_records(self):
        """The deadlocks found so far: a list of dicts (times in ps, ports in cycle order)."""
        cdef DLState* st = <DLState*> self.w.deadlock
        cdef DLRecord* r
        cdef int32_t k
        out = []
        if st == NULL:
            return out
        for k in range(st.n_recs):
            r = &st.recs[k]
            out.append(dict(formed_ps=r.formed, detected_ps=r.detected, prio=r.prio,
                            ports=[st.rec_ports[r.port_off + j] // NPRIO for j in range(r.n_ports)],
                            prios=[st.rec_ports[r.port_off + j] % NPRIO for j in range(r.n_ports)],
                            flows=sorted(st.rec_flows[r.flow_off + j] for j in range(r.n_flows))))
        return out

    @property
    def deadlock_detection(self):
        """The detector checked the run as it went (not only when it stalled)."""
        return self.w.deadlock != NULL and (<DLState*> self.w.deadlock).periodic != 0

    def deadlocks_at_stall(self, int64_t threshold_ps):
        """The run has stalled: record the PFC cycles that hold it (deadlock.pyx), detection on
        or off; with events still pending, queues paused for `threshold_ps` (or the detector's
        threshold) count.  Returns how many new cycles were found."""
        if threshold_ps < 0:
            raise ValueError("deadlocks_at_stall: threshold must be >= 0")
        cdef bint frozen
        cdef int n
        if self.w.n_parts == 1:
            frozen = self.s.n_events == self.s.n_monitors
        else:           # (monitors apart: they are no events in parts)
            frozen = windows_idle(self.w.parts, self.w.n_parts, &self.win)
        n = deadlock_at_stall(self.s, threshold_ps, frozen, self.now_ps)
        if n < 0 or self.s.error == ERR_NOMEM:
            raise MemoryError("rocesim core: out of memory for the deadlock analysis")
        return n

    def run(self, int64_t until_ps, int64_t max_events=INT64_MAX, int threads=1, bint adapt=False):
        """Run events up to time `until_ps` (inclusive) or `max_events` events, a run in
        parts on `threads` threads (capped at its parts and at MAX_THREADS; one part, or a
        scheme written in Python, runs on one), or with `adapt` on 1 to `threads`, as many
        as run it faster, measured as it goes (`threads: auto`; `thread_stats` says how
        many it used).  The results do not depend on the threads.

        Returns STOP_EMPTY, STOP_TIME, STOP_EVENTS or STOP_DEADLOCK.
        """
        cdef int status
        cdef int32_t k
        cdef Sim* part
        if threads < 1:
            raise ValueError(f"Core.run: threads must be a whole number >= 1, got {threads}")
        if self._scheme is not None:
            # a scheme written in Python (its bridge is what install_scheme keeps): its
            # callbacks, which may share the scheme's state, run one at a time in the
            # parts' order, not in the order threads happen to take the GIL
            threads = 1
        if self.w.n_parts > 1 and self.win.order == NULL:
            raise NotImplementedError("Core.run: parts added by debug.add_empty_part are for readback tests only")
        if self.w.fluid != NULL:
            status = fluid_loop(self.s, until_ps, max_events)
        elif self.w.n_parts == 1:
            status = loop.run_loop(self.s, until_ps, max_events)
        else:
            with nogil:     # (a scheme written in Python takes the GIL in its callbacks)
                status = windows_run(self.w.parts, self.w.n_parts, &self.win, until_ps, max_events, threads, adapt)
        if status == loop.STOP_EMPTY and all(self.w.parts[k].error == ERR_NONE for k in range(self.w.n_parts)):
            # nothing left to happen: give back the pools' memory before the results are read
            for k in range(self.w.n_parts):
                part = self.w.parts[k]
                qp_pool_release(part)
                if part.pool_used == 0 and part.pool_cap > (INITIAL_POOL if k == 0 else PART_POOL) \
                        and pool_init(part, INITIAL_POOL if k == 0 else PART_POOL) < 0:
                    part.error = ERR_NOMEM
            rocesim_malloc_trim()           # and hand the freed pages back (glibc keeps them)
        for k in range(self.w.n_parts):
            if self.w.parts[k].error == ERR_NOMEM:
                raise MemoryError("rocesim core: out of memory for events or packets")
        if any(self.w.parts[k].error == ERR_CALLBACK for k in range(self.w.n_parts)):
            for k in range(self.w.n_parts):
                self.w.parts[k].error = ERR_NONE
            err, self._scheme.error = self._scheme.error, None
            raise err
        return status

    def base_rtt_ps(self):
        """Per-flow idle-network RTT of a full packet and its ACK (0 for compute steps)."""
        cdef int32_t i, hops
        out = np.zeros(self.w.n_flows, np.int64)
        for i in range(self.w.n_flows):
            if not self.w.flows[i].is_compute:
                out[i] = flow_base_rtt(self.s, i, &hops)
        return out

    def base_rtt_between(self, src, dst):
        """Idle-network RTT (ps) of a full packet and its ACK between hosts src[i] and dst[i]
        (0 where there is no path)."""
        cdef cnp.ndarray[int32_t] a = _as(src, np.int32, "src")
        cdef cnp.ndarray[int32_t] b = _as(dst, np.int32, "dst", a.shape[0])
        cdef cnp.ndarray[int64_t] out = np.zeros(a.shape[0], np.int64)
        cdef int32_t k
        _check_range(a, 0, self.w.n_hosts, "src")
        _check_range(b, 0, self.w.n_hosts, "dst")
        for k in range(a.shape[0]):
            if a[k] != b[k]:
                out[k] = pair_base_rtt(self.s, a[k], b[k])
        return out

    @property
    def now_ps(self):
        """The simulated time reached: the latest clock over the parts."""
        return max(self.w.parts[k].now for k in range(self.w.n_parts))

    @property
    def next_event_ps(self):
        """Time of the next event over the parts, or -1 if none is left."""
        cdef int64_t t = windows_next(self.w.parts, self.w.n_parts), j
        cdef int32_t k
        for k in range(self.w.n_handoff):          # packets on their way between parts
            if windows_pending(&self.win, k) and self.w.handoff[k].pk[0].time < t:
                t = self.w.handoff[k].pk[0].time
        for k in range(self.w.n_parts):              # and dependency messages (their earliest start)
            for j in range(self.w.parts[k].n_deps):
                if self.w.parts[k].deps[j].time < t:
                    t = self.w.parts[k].deps[j].time
        return -1 if t == INT64_MAX or t < 0 else t

    @property
    def packets_in_use(self):
        """Packets in the parts' pools, and on their way from one part to another."""
        return self.stats()["packets_in_use"]

    def stats(self):
        """Counters of the whole run so far, as a dict of ints: sums over the parts (the
        clocks: the latest part's)."""
        cdef int32_t k
        st = _counters(self.w.parts, self.w.n_parts)
        if self.win.order != NULL:         # a run in parts (not debug.add_empty_part's)
            # peaks over the window ends (a sum of the parts' own peaks would overstate them)
            st["packets_peak"], st["queue_pairs_peak"] = self.win.pkt_peak, self.win.qp_peak
            st["packets_in_use"] += sum(windows_pending(&self.win, k) for k in range(self.w.n_handoff))
        return st

    def flow_arrays(self):
        """Per-flow results (numpy arrays, picoseconds; -1 where not reached).  `start_ps`
        is when the flow started, or, for a flow without parents that has not, when it is
        due to; -1 for a flow still waiting for its parents."""
        cdef Sim* s = self.s
        cdef World* w = self.w
        cdef int32_t F = w.n_flows, i
        cdef cnp.ndarray[int64_t] start = np.empty(F, np.int64)
        cdef cnp.ndarray[int64_t] finish = np.empty(F, np.int64)
        cdef cnp.ndarray[int64_t] rx_finish = np.empty(F, np.int64)
        cdef cnp.ndarray[int64_t] ideal = np.empty(F, np.int64)
        cdef cnp.ndarray[int64_t] delivered = np.empty(F, np.int64)
        cdef cnp.ndarray[int64_t] retx = np.zeros(F, np.int64)
        cdef cnp.ndarray[int32_t] timeouts = np.zeros(F, np.int32)
        cdef cnp.ndarray[int64_t] reordered = np.zeros(F, np.int64)
        cdef cnp.ndarray[int64_t] spurious = np.zeros(F, np.int64)
        cdef cnp.ndarray[int64_t] trimmed = np.zeros(F, np.int64)
        cdef LossState* lo
        cdef LossRec* r
        cdef cnp.ndarray[int32_t] state = np.empty(F, np.int32)
        cdef cnp.ndarray[int32_t] top = np.empty(F, np.int32)
        cdef Qp* qp
        cdef Sim* part
        cdef int64_t k
        cdef int32_t j, q
        cdef cnp.ndarray[cnp.uint8_t] has_parents = np.zeros(F, np.uint8)
        for k in range(w.flows[F].child_off):
            has_parents[w.child_idx[k]] = 1
        for i in range(F):
            fl = &w.flows[i]
            # started: when; a flow without parents not yet started: when it is due to
            start[i] = fl.released if fl.state != FS_WAITING else (-1 if has_parents[i] else fl.due)
            finish[i] = fl.finish
            rx_finish[i] = fl.rx_finish
            ideal[i] = flow_ideal_fct(s, i)
            top[i] = flow_top_switch(s, i)
            state[i] = fl.state
            delivered[i] = _delivered(self._rx_part(i), i)
        for j in range(self.w.n_parts):
            part = self.w.parts[j]
            for q in range(part.qp_cap):     # the flows in flight: queue pairs and receive records
                qp = qp_at(part, q)
                if qp.flow != NIL and qp.loss != NULL:
                    lo = qp.loss
                    retx[qp.flow] += lo.retx_bytes
                    timeouts[qp.flow] += lo.n_timeouts
                    reordered[qp.flow] += lo.reordered
                    spurious[qp.flow] += lo.spurious_bytes
                    trimmed[qp.flow] += lo.trimmed
            for k in range(part.n_losses):   # counts kept past them (qp.pxd): a flow's add up
                r = &part.losses[k]
                retx[r.flow] += r.retx_bytes
                timeouts[r.flow] += r.n_timeouts
                reordered[r.flow] += r.reordered
                spurious[r.flow] += r.spurious_bytes
                trimmed[r.flow] += r.trimmed
        return dict(start_ps=start, finish_ps=finish, rx_finish_ps=rx_finish,
                    ideal_fct_ps=ideal, delivered_bytes=delivered, retx_bytes=retx,
                    timeouts=timeouts, reordered_packets=reordered, spurious_retx_bytes=spurious, trimmed=trimmed,
                    state=state, top_switch=top)

    def port_arrays(self):
        """Per-port counters and state (numpy arrays; pause time in ps per priority)."""
        cdef World* w = self.w
        cdef int32_t P = w.n_ports, i, k
        cdef cnp.ndarray[int64_t] tx_bytes = np.empty(P, np.int64)
        cdef cnp.ndarray[int64_t] tx_pkts = np.empty(P, np.int64)
        cdef cnp.ndarray[int64_t] drops = np.empty(P, np.int64)
        cdef cnp.ndarray[int64_t] pauses = np.empty(P, np.int64)
        cdef cnp.ndarray[int64_t] marks = np.empty(P, np.int64)
        cdef cnp.ndarray[int64_t, ndim=2] paused_ps = np.empty((P, NPRIO), np.int64)
        cdef cnp.ndarray[int64_t, ndim=2] queue_bytes = np.empty((P, NPRIO), np.int64)
        cdef cnp.ndarray[int32_t] paused_mask = np.empty(P, np.int32)
        cdef cnp.ndarray[int64_t] wd_det = np.empty(P, np.int64)
        cdef cnp.ndarray[int64_t] wd_res = np.empty(P, np.int64)
        cdef cnp.ndarray[int64_t] wd_drop = np.empty(P, np.int64)
        cdef cnp.ndarray[int64_t] trimmed = np.empty(P, np.int64)
        cdef int64_t now = self.now_ps
        for i in range(P):
            p = &w.ports[i]
            tx_bytes[i] = p.tx_bytes
            tx_pkts[i] = p.tx_pkts
            drops[i] = p.buffer_drops
            pauses[i] = p.pauses_sent
            marks[i] = p.ecn_marks
            paused_mask[i] = p.paused_mask
            wd_det[i] = p.wd_detections
            wd_res[i] = p.wd_restorations
            wd_drop[i] = p.wd_dropped
            trimmed[i] = p.trimmed
            for k in range(NPRIO):
                paused_ps[i, k] = p.paused_ps[k]
                if (p.paused_mask >> k) & 1:
                    paused_ps[i, k] += now - p.paused_since[k]
                queue_bytes[i, k] = p.q_bytes[k]
        return dict(tx_bytes=tx_bytes, tx_packets=tx_pkts, buffer_drops=drops, pauses_sent=pauses, ecn_marks=marks,
                    paused_ps=paused_ps, queue_bytes=queue_bytes, paused_mask=paused_mask,
                    watchdog_detections=wd_det, watchdog_restorations=wd_res, watchdog_drops=wd_drop, trimmed=trimmed)

    def pause_timeline(self):
        """Every pause interval so far: (port, prio, start_ps, end_ps) arrays, end -1 for a
        pause still on now; ordered by start, then port and priority; and the count of
        intervals not recorded (beyond the timeline's cap).  Each part records its own
        ports' intervals; they are put together here."""
        cdef World* w = self.w
        cdef Sim* part
        cdef int64_t n = 0, k, j = 0, lost = 0
        cdef int32_t i, q, m
        cdef int64_t n_open = 0
        for m in range(self.w.n_parts):
            n += self.w.parts[m].tl_n
            lost += self.w.parts[m].tl_lost
        for i in range(w.n_ports):
            for q in range(NPRIO):
                if (w.ports[i].paused_mask >> q) & 1:
                    n_open += 1
        port = np.empty(n + n_open, np.int32)
        prio = np.empty(n + n_open, np.int32)
        start = np.empty(n + n_open, np.int64)
        end = np.empty(n + n_open, np.int64)
        cdef int32_t[::1] vport = port, vprio = prio
        cdef int64_t[::1] vstart = start, vend = end
        for m in range(self.w.n_parts):
            part = self.w.parts[m]
            for k in range(part.tl_n):
                vport[j] = part.tl[k].port
                vprio[j] = part.tl[k].prio
                vstart[j] = part.tl[k].start
                vend[j] = part.tl[k].end
                j += 1
        for i in range(w.n_ports):
            for q in range(NPRIO):
                if (w.ports[i].paused_mask >> q) & 1:
                    vport[j] = i
                    vprio[j] = q
                    vstart[j] = w.ports[i].paused_since[q]
                    vend[j] = -1
                    j += 1
        order = np.lexsort((prio, port, start))
        return dict(port=port[order], prio=prio[order], start_ps=start[order], end_ps=end[order],
                    lost=lost)

    def sample_flows(self):
        """The active data flows now: (ids, sending rate in bps, bytes delivered in order),
        from every part's queue pairs, by id."""
        cdef Sim* s
        cdef int32_t n = 0, k = 0, q, m
        cdef Qp* qp
        for m in range(self.w.n_parts):
            n += self.w.parts[m].qp_used
        cdef cnp.ndarray[int32_t] ids = np.empty(n, np.int32)
        cdef cnp.ndarray[int64_t] rate = np.empty(n, np.int64)
        cdef cnp.ndarray[int64_t] delivered = np.empty(n, np.int64)
        for m in range(self.w.n_parts):
            s = self.w.parts[m]
            for q in range(s.qp_cap):
                qp = qp_at(s, q)
                if qp.flow != NIL and not qp.is_rx:
                    ids[k] = qp.flow
                    rate[k] = qp.rate_bps
                    delivered[k] = _delivered(self._rx_part(qp.flow), qp.flow)
                    k += 1
        order = np.argsort(ids)
        return ids[order], rate[order], delivered[order]

    def sample_queues(self, ports):
        """Egress queue bytes now (all priorities) of the given ports."""
        cdef World* w = self.w
        cdef cnp.ndarray[int32_t] idx = _as(ports, np.int32, "ports")
        cdef cnp.ndarray[int64_t] out = np.empty(idx.shape[0], np.int64)
        cdef int32_t k, j
        cdef int64_t total
        _check_range(idx, 0, w.n_ports, "ports")
        for k in range(idx.shape[0]):
            total = 0
            for j in range(NPRIO):
                total += w.ports[idx[k]].q_bytes[j]
            out[k] = total
        return out

    def switch_arrays(self):
        """Per-switch buffer state: bytes held, shared pool use."""
        cdef World* w = self.w
        cdef int32_t n = w.n_nodes - w.n_hosts, i
        used = np.empty(n, np.int64)
        shared = np.empty(n, np.int64)
        for i in range(n):
            used[i] = w.sw[i].used
            shared[i] = w.sw[i].shared_used
        return dict(used_bytes=used, shared_used_bytes=shared)


cdef int64_t _delivered(Sim* rx_part, int32_t f) noexcept:
    """Bytes of data flow f in order at its receiver, whose part is `rx_part`: all once its
    last byte is in, else what its receive state holds (none before its first data)."""
    cdef Flow* fl = &rx_part.w.flows[f]
    cdef Qp* rx
    if fl.is_compute:
        return 0
    if fl.rx_finish != NIL:
        return fl.size
    rx = rx_of(rx_part, f)
    return rx.rcv_nxt if rx != NULL else 0


cdef dict _counters(Sim** parts, int32_t n):
    """The counters of parts[0 .. n) summed (Stats, pools, pending events), and their
    clocks' latest.  Peaks are summed too: exact with one part."""
    cdef Stats st
    cdef int64_t* total = <int64_t*> &st
    cdef int64_t* one
    cdef int64_t pool_used = 0, pool_peak = 0, qp_used = 0, qp_peak = 0, n_events = 0, ev_mem = 0
    cdef int64_t now = 0, last_work = 0
    cdef int32_t k, j
    cdef Sim* s
    memset(&st, 0, sizeof(Stats))
    for k in range(n):
        s = parts[k]
        one = <int64_t*> &s.st
        for j in range(<int32_t> (sizeof(Stats) // sizeof(int64_t))):    # Stats: int64 counters only
            total[j] += one[j]
        pool_used += s.pool_used
        pool_peak += s.pool_peak
        qp_used += s.qp_used
        qp_peak += s.qp_peak
        n_events += s.n_events
        ev_mem += ev_bytes(s)
        now = max(now, s.now)
        last_work = max(last_work, s.last_work)
    return dict(
        events=st.events, link_crossings=st.link_crossings, buffer_drops=st.buffer_drops,
        ttl_drops=st.ttl_drops, pfc_pauses=st.pauses, pfc_resumes=st.resumes,
        cnps=st.cnps, nacks=st.nacks, acks=st.acks, timeouts=st.timeouts,
        retx_bytes=st.retx_bytes, data_packets_sent=st.data_pkts_sent,
        data_bytes_delivered=st.data_bytes_delivered, flows_done=st.flows_done,
        time_errors=st.time_errors, link_drops=st.link_drops,
        watchdog_drops=st.watchdog_drops, nic_drops=st.nic_drops,
        no_route_drops=st.no_route_drops, fluid_solves=st.fluid_solves, reordered_packets=st.reordered,
        spurious_retx_bytes=st.spurious_bytes, trimmed=st.trimmed, ecn_echoes=st.ecn_echoes,
        cnps_received=st.cnps_received, fluid_split_fallbacks=st.fluid_split_fallbacks,
        packets_in_use=pool_used,
        packets_peak=pool_peak, queue_pairs_in_use=qp_used, queue_pairs_peak=qp_peak,
        pending_events=n_events, event_queue_bytes=ev_mem, sim_time_ps=now, last_activity_ps=last_work)


def five_tuple_hashes(keys):
    """(forward, reverse) ECMP hashes, uint32 arrays, of the 5-tuples the uint64 `keys` stand
    for, as the core computes them (routing.key_hash): a flow that is its own queue pair has
    its id as key, which the core hashes by itself when no `flow_hash` is given."""
    k = np.ascontiguousarray(keys, dtype=np.uint64)
    cdef const uint64_t[::1] kv = k
    cdef cnp.ndarray[uint32_t] fwd = np.empty(k.shape[0], np.uint32)
    cdef cnp.ndarray[uint32_t] rev = np.empty(k.shape[0], np.uint32)
    cdef Py_ssize_t i
    for i in range(k.shape[0]):
        fwd[i] = key_hash(kv[i])
        rev[i] = key_rhash(kv[i])
    return fwd, rev


cdef uint32_t* _copy_u32(cnp.ndarray a) except? NULL:
    cdef int32_t n = a.shape[0], i
    cdef uint32_t* out = <uint32_t*> malloc(max(n, 1) * sizeof(uint32_t))
    cdef uint32_t[::1] v = a
    if out == NULL:
        raise MemoryError()
    for i in range(n):
        out[i] = v[i]
    return out


cdef int32_t* _copy_i32(cnp.ndarray a) except? NULL:
    cdef int32_t n = a.shape[0], i
    cdef int32_t* out = <int32_t*> malloc(max(n, 1) * sizeof(int32_t))
    cdef int32_t[::1] v = a
    if out == NULL:
        raise MemoryError()
    for i in range(n):
        out[i] = v[i]
    return out
