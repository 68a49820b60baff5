# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Flows: release (start times and the dependency graph), paths, ideal completion time.

Flows without parents start at their start time, taken one at a time from a
sorted order (one pending event, however many flows).  A flow with parents is
released `delay` after its last parent is satisfied: a data flow when its last
byte reaches the destination, a compute step when its duration has elapsed.

Ideal FCT.  A flow alone in an idle network, sent at line rate, finishes when the
ACK of its last byte reaches the sender.  With store-and-forward links 1..h of
rates r_i and delays d_i, n packets (n-1 full ones of S wire bytes, a last one of
L), and t_i(x) the serialization of x bytes on link i, the last byte reaches the
receiver at

    sum_i d_i + max over j <= j' of [ sum_{i<j} t_i(S) + (n-1) t_j(S)
                                      + sum_{j<i<=j'} t_i(S) + t_j'(L) + sum_{i>j'} t_i(L) ]

(the longest path through the (link, packet) grid of the tandem pipeline; for n = 1
it is sum_i t_i(L) + d_i).  The ACK (A bytes) then takes sum over the reverse path
of t_i(A) + d_i, except that it may wait behind the previous ACK at a hop (when the
last packet is shorter than an ACK); both ACKs are carried through the reverse path.
This is exact for the simulated model (given that earlier ACKs are spaced by at
least an ACK's serialization), so an idle-network flow has slowdown 1.  (The HPCC fork's "standalone FCT" is an approximation of the same
quantity: base RTT + bytes / bottleneck rate.)  A flow with a rate limit is paced by its
NIC (packet j leaves no earlier than j x S x 8 / limit), which `_paced` adds.
"""
from libc.stdint cimport int64_t, int32_t, uint32_t
from rocesim._core.defs cimport (Sim, World, Flow, Switch, DepMsg, NIL, FS_ACTIVE, FS_DONE, ERR_NOMEM,
                                 EV_FLOW_START, EV_COMPUTE_DONE)
from rocesim._core.growth cimport room_for_one
from rocesim._core.events cimport ev_push
from rocesim._core.link cimport tx_time
from rocesim._core.routing cimport route_lookup, flow_hash, flow_rhash, flow_path_off
from rocesim._core.qp cimport qp_close

cdef enum:
    MAX_PATH = 256


cdef void flow_activate(Sim* s, int32_t f) noexcept nogil:
    """Flow f starts now: state ACTIVE."""
    cdef World* w = s.w
    w.flows[f].state = FS_ACTIVE
    w.flows[f].released = s.now


cdef void flow_finish(Sim* s, int32_t f) noexcept nogil:
    """Flow f is done now (sender has the last ACK, or the compute step ended): its queue
    pair, if any, goes back to the pool."""
    cdef Flow* fl = &s.w.flows[f]
    fl.state = FS_DONE
    fl.finish = s.now
    s.st.flows_done += 1
    qp_close(s, f)


cdef void flows_next_root(Sim* s) noexcept nogil:
    """Schedule the start of the next flow without parents, in start order."""
    cdef int32_t f
    if s.next_root < s.n_roots:
        f = s.start_order[s.next_root]
        s.next_root += 1
        ev_push(s, s.w.flows[f].due, EV_FLOW_START, f, 1)


cdef inline void _dep_put(Sim* s, int32_t child, int64_t time) noexcept nogil:
    """Append a dependency message (child may start at `time`) to this part's buffer."""
    if room_for_one(<void**> &s.deps, s.n_deps, &s.cap_deps, sizeof(DepMsg), 64) < 0:
        s.error = ERR_NOMEM
        return
    s.deps[s.n_deps].time = time
    s.deps[s.n_deps].child = child
    s.n_deps += 1


cdef inline void _release_children(Sim* s, int32_t f) noexcept nogil:
    """Flow f is satisfied now (its last byte delivered, or its compute step over): each
    child waits for one parent fewer, and starts `due` after its last parent.

    A run in parts (issue 20): a child that starts in another part (its source host's)
    gets a message instead (window.pyx applies it at the window's end): it may start no
    earlier than now + max(due, L), L the lookahead, the earliest any information sent
    now could reach its part.  The child's start time so far is kept in `released` (NIL
    until a parent sets it; it becomes the start time when the flow starts), so that the
    last parent starts it at the latest of its parents' times.  With one part that is
    today's now + due of the last parent."""
    cdef World* w = s.w
    cdef Flow* c
    cdef int32_t k, child
    cdef int64_t t
    for k in range(w.flows[f].child_off, w.flows[f + 1].child_off):
        child = w.child_idx[k]
        c = &w.flows[child]
        t = s.now + c.due
        if w.node_part != NULL and w.node_part[c.src] != s.part:
            _dep_put(s, child, t if c.due >= w.lookahead else s.now + w.lookahead)
            continue
        if c.released > t:
            t = c.released            # a parent in another part set a later start
        c.released = t
        c.slot.deps_left -= 1
        if c.slot.deps_left == 0:
            ev_push(s, t, EV_FLOW_START, child, 0)


cdef void flow_delivered(Sim* s, int32_t f) noexcept nogil:
    """The last byte of data flow f reached its destination."""
    _release_children(s, f)


cdef void flow_compute_done(Sim* s, int32_t f) noexcept nogil:
    flow_finish(s, f)
    s.w.flows[f].rx_finish = s.now
    _release_children(s, f)


cdef int32_t trace_path(Sim* s, int32_t src, int32_t dst, uint32_t hash, int32_t path_off,
                        int32_t* out, int32_t cap) noexcept nogil:
    """Ports crossed from host src to host dst (as routed for `hash`); -1 if no path."""
    cdef World* w = s.w
    cdef int32_t port = w.hosts[src].port
    cdef int32_t n = 0, node
    while n < cap:
        out[n] = port
        n += 1
        node = w.ports[port].peer_node
        if node == dst:
            return n
        if node < w.n_hosts:
            return -1
        port = route_lookup(s, &w.sw[node - w.n_hosts], dst, hash, path_off, n - 1, NULL)
        if port == NIL:
            return -1
    return -1


cdef inline int64_t _one_packet_latency(Sim* s, int32_t* path, int32_t h, int64_t size) noexcept nogil:
    cdef World* w = s.w
    cdef int64_t t = 0
    cdef int32_t i
    for i in range(h):
        t += tx_time(size, w.ports[path[i]].rate_bps) + w.ports[path[i]].delay_ps
    return t


cdef inline int32_t _paths(Sim* s, int32_t f, int32_t* fwd, int32_t* rev, int32_t* nrev) noexcept nogil:
    cdef Flow* fl = &s.w.flows[f]
    nrev[0] = trace_path(s, fl.dst, fl.src, flow_rhash(s.w, f), NIL, rev, MAX_PATH)
    return trace_path(s, fl.src, fl.dst, flow_hash(s.w, f), flow_path_off(s, f), fwd, MAX_PATH)


cdef inline int64_t _data_wire(Sim* s, int64_t payload) noexcept nogil:
    cdef World* w = s.w
    return payload + w.p.header + (w.p.int_header if w.p.int_enabled else 0)


cdef inline int64_t _ack_wire(Sim* s) noexcept nogil:
    cdef World* w = s.w
    return w.p.ack_int_size if w.p.int_enabled else w.p.ack_size


cdef inline int64_t _rtt(Sim* s, int32_t* fwd, int32_t h, int32_t* rev, int32_t hr) noexcept nogil:
    """Idle-network RTT of a full data packet over `fwd` and its ACK back over `rev`."""
    return (_one_packet_latency(s, fwd, h, _data_wire(s, s.w.p.payload))
            + _one_packet_latency(s, rev, hr, _ack_wire(s)))


cdef int64_t flow_base_rtt(Sim* s, int32_t f, int32_t* hops) noexcept nogil:
    """Idle-network RTT of a full packet of flow f and its ACK along the flow's routed path
    (0 if either way has none); `hops` gets the switches on the data path."""
    cdef int32_t fwd[MAX_PATH]
    cdef int32_t rev[MAX_PATH]
    cdef int32_t h, hr
    h = _paths(s, f, fwd, rev, &hr)
    hops[0] = h - 1 if h > 0 else 0
    if h < 0 or hr < 0:
        return 0
    return _rtt(s, fwd, h, rev, hr)


cdef int64_t pair_base_rtt(Sim* s, int32_t src, int32_t dst) noexcept nogil:
    """Idle-network RTT between two hosts along their routed path (first ECMP choice for
    hash 0); 0 if either way has no path."""
    cdef int32_t fwd[MAX_PATH]
    cdef int32_t rev[MAX_PATH]
    cdef int32_t h = trace_path(s, src, dst, 0, NIL, fwd, MAX_PATH)
    cdef int32_t hr = trace_path(s, dst, src, 0, NIL, rev, MAX_PATH)
    if h < 0 or hr < 0:
        return 0
    return _rtt(s, fwd, h, rev, hr)


cdef int64_t _pipeline(int32_t h, int64_t* full, int64_t* last, int64_t k) noexcept nogil:
    """Serialization part of the time for packet k to cross links 0..h-1 after k full ones.

    The longest path through the (link, packet) grid: full packets 0..k-1 all cross
    some link j, packet k-1 goes on to link j', packet k (tx `last`) finishes the path.
    """
    cdef int64_t best = 0, pre = 0, mid, val
    cdef int32_t i, j, jp
    if k == 0:
        for i in range(h):
            best += last[i]
        return best
    for j in range(h):
        mid = pre + k * full[j]
        for jp in range(j, h):
            val = mid
            for i in range(j + 1, jp + 1):
                val += full[i]
            val += last[jp]
            for i in range(jp + 1, h):
                val += last[i]
            if val > best:
                best = val
        pre += full[j]
    return best


cdef int64_t _paced(int32_t h, int64_t* full, int64_t* last, int64_t k, int64_t gap) noexcept nogil:
    """`_pipeline` for a sender that may start packet j no earlier than j x gap (a rate
    limit below line rate paces full packets `gap` apart; gap 0: no limit).

    The longest path may begin at any packet m whose paced start binds:
    max over m of m x gap + _pipeline(k - m).  For k - m >= 1 the pipeline is a maximum of
    terms linear in k - m, so the maximum over m lies at m = 0 or m = k - 1; m = k adds
    the lone last packet."""
    cdef int64_t best = _pipeline(h, full, last, k), v
    if gap <= 0 or k == 0:
        return best
    v = (k - 1) * gap + _pipeline(h, full, last, 1)
    if v > best:
        best = v
    v = k * gap + _pipeline(h, full, last, 0)
    return v if v > best else best


cdef int32_t flow_top_switch(Sim* s, int32_t f) noexcept nogil:
    """The switch at the top of flow f's one path, the middle of the switches it crosses (a
    leaf-spine's spine, a fat tree's core, or its aggregation within a pod; the ToR of a
    flow under one ToR), as routed now: what its ECMP draw picked.  -1 for a compute step,
    a flow with no path, and one whose packets may part ways: the sender varies its entropy
    (nic.entropy_every), or a switch on the way chooses among equal-cost ports by a
    load-balancing scheme of its own (flowlet, spray, adaptive)."""
    cdef World* w = s.w
    cdef Flow* fl = &w.flows[f]
    cdef int32_t fwd[MAX_PATH]
    cdef int32_t h, i, path_off = flow_path_off(s, f)
    cdef Switch* sw
    if fl.is_compute or (path_off == NIL and w.p.entropy_every > 0):
        return -1
    h = trace_path(s, fl.src, fl.dst, flow_hash(w, f), path_off, fwd, MAX_PATH)
    if h < 2:
        return -1
    for i in range(h - 1):
        sw = &w.sw[w.ports[fwd[i]].peer_node - w.n_hosts]
        if path_off == NIL and sw.lb_pick != NULL and \
                w.route_groups[(sw.node - w.n_hosts) * w.n_route_classes + w.route_class[fl.dst]].cnt > 1:
            return -1
    return w.ports[fwd[(h - 2) // 2]].peer_node


cdef int64_t flow_ideal_fct(Sim* s, int32_t f) noexcept nogil:
    """Completion time of flow f alone in an idle network (see the module docstring)."""
    cdef World* w = s.w
    cdef Flow* fl = &w.flows[f]
    cdef int32_t fwd[MAX_PATH]
    cdef int32_t rev[MAX_PATH]
    cdef int64_t full[MAX_PATH]
    cdef int64_t last[MAX_PATH]
    cdef int32_t h, hr, i
    cdef int64_t n, prev, S, L, delays = 0, t_last, t_prev, f1, a2, tack, gap = 0
    if fl.is_compute:
        return fl.size                    # a compute step's duration
    h = _paths(s, f, fwd, rev, &hr)
    if h < 0 or hr < 0:
        return -1
    n = (fl.size + w.p.payload - 1) // w.p.payload
    S = _data_wire(s, w.p.payload)
    L = _data_wire(s, fl.size - (n - 1) * w.p.payload)
    for i in range(h):
        full[i] = tx_time(S, w.ports[fwd[i]].rate_bps)
        last[i] = tx_time(L, w.ports[fwd[i]].rate_bps)
        delays += w.ports[fwd[i]].delay_ps
    if w.flow_rate_limit != NULL and w.flow_rate_limit[f] > 0:
        gap = tx_time(S, w.flow_rate_limit[f])            # the NIC paces full packets this far apart
    t_last = _paced(h, full, last, n - 1, gap) + delays
    # The final ACK may queue behind the ACK before it (when the last packet is shorter
    # than an ACK): carry both through the reverse path, the earlier one unhindered.
    prev = ((n - 1) // w.p.ack_every) * w.p.ack_every - 1     # packet of the previous ACK
    if prev < 0:
        return t_last + _one_packet_latency(s, rev, hr, _ack_wire(s))
    t_prev = _paced(h, full, full, prev, gap) + delays
    f1 = t_prev
    a2 = t_last
    for i in range(hr):
        tack = tx_time(_ack_wire(s), w.ports[rev[i]].rate_bps)
        f1 += tack                                   # the earlier ACK leaves hop i
        a2 = (a2 if a2 > f1 else f1) + tack + w.ports[rev[i]].delay_ps
        f1 += w.ports[rev[i]].delay_ps
    return a2
