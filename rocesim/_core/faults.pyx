# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Scheduled faults: a NIC that stops draining, a link that goes down and up, a link that
slows down.  Python checks and schedules them (rocesim/faults.py); each is an EV_FAULT
event applied here.

* NIC stop: the host's NIC stops draining its receive side, so it pauses every lossless
  priority of its link, and keeps them paused until it resumes: the PFC storm source of
  Guo et al., "RDMA over Commodity Ethernet at Scale" (SIGCOMM 2016), where a NIC whose
  receive pipeline stalled kept sending PAUSE frames.  Its buffer still takes in what was
  on the way (up to the fault's `value` bytes: the headroom of its link); data beyond
  that (sent by a switch whose PFC watchdog ignores the PAUSE) is dropped (nic_drops).
* Link down: both directions stop; packets on the wire are lost where they arrive, packets
  queued for it are dropped (their buffer is released), its PFC state is cleared (a PAUSE
  does not outlive its link).  Until routes are recomputed (Python does it at the fault
  time, or `reroute_after` later) packets routed to it are dropped, as a switch drops
  what it forwards to a port that is down.  Link up: it carries traffic again.
* Link rate: both directions serialize at the new rate from the next packet on.

Lost packets are counted in Stats.link_drops (not in `drops`, which are buffer drops).

A run in parts (issue 20): a link fault's EV_FAULT goes into the part of each end, and
each part applies its own end (parts.pxd): its port, and the packets on the link that it
holds.  For a cut link these are the packets it has handed off over its port in the open
window (not yet taken by the other part: link.pxd) and those on the wire coming to it (in
its pool); together with the other end's, exactly the packets on the link's two wires at
that time, as in one part.  A NIC's fault goes into its host's part.
"""
from libc.stdint cimport int64_t, int32_t, uint32_t, uint8_t
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memcpy
from rocesim._core.defs cimport Sim, World, Port, Packet, Handoff, NIL, NPRIO, PK_DATA, PK_PAUSE, PK_LOST, EV_FAULT
from rocesim._core.events cimport ev_push
from rocesim._core.link cimport q_push, q_pop, port_kick, port_set_paused
from rocesim._core.pool cimport pkt_alloc, pkt_free
from rocesim._core.switch cimport switch_flush
from rocesim._core.nic_send cimport nic_kick
from rocesim._core.nic_recv cimport nic_receive
from rocesim._core.parts cimport node_sim, port_sim


cdef int faults_init(Sim* s, Fault* faults, int32_t n) noexcept nogil:
    """Copy the fault schedule and push one EV_FAULT per entry into each part it touches
    (`s`: part 0); -1 if out of memory."""
    cdef World* w = s.w
    cdef FaultState* st = <FaultState*> malloc(sizeof(FaultState))
    cdef int32_t k
    cdef Sim* a
    cdef Sim* b
    if st == NULL:
        return -1
    st.f = <Fault*> malloc(max(n, 1) * sizeof(Fault))
    if st.f == NULL:
        free(st)
        return -1
    memcpy(st.f, faults, n * sizeof(Fault))
    st.n = n
    st.rx_room = <int64_t*> calloc(max(w.n_hosts, 1), sizeof(int64_t))
    if st.rx_room == NULL:
        free(st.f)
        free(st)
        return -1
    w.faults = st
    for k in range(n):
        if st.f[k].kind == F_NIC_STOP or st.f[k].kind == F_NIC_RESUME:
            a = b = node_sim(s, st.f[k].target)
        else:
            a, b = port_sim(s, st.f[k].target), port_sim(s, w.ports[st.f[k].target].peer)
        ev_push(a, st.f[k].time, EV_FAULT, k, 0)
        if b != a:
            ev_push(b, st.f[k].time, EV_FAULT, k, 0)
        if a.error or b.error:
            return -1
    return 0


cdef void faults_free(Sim* s) noexcept nogil:
    cdef World* w = s.w
    cdef FaultState* st = <FaultState*> w.faults
    if st != NULL:
        free(st.f)
        free(st.rx_room)
        free(st)
        w.faults = NULL


cdef void _nic_pfc(Sim* s, int32_t host, bint on) noexcept nogil:
    """The NIC of `host` sends a PAUSE (on) or RESUME frame for each lossless priority,
    ahead of its data (strict-priority queue 0)."""
    cdef World* w = s.w
    cdef int32_t port = w.hosts[host].port
    cdef Port* p = &w.ports[port]
    cdef int32_t prio, i
    cdef Packet* pk
    for prio in range(1, NPRIO):
        if not (w.p.pfc_mask >> prio) & 1 or p.pause_sent[prio] == on:
            continue
        i = pkt_alloc(s)
        if i == NIL:
            return
        pk = &s.pkts[i]
        pk.kind = PK_PAUSE
        pk.prio = prio
        pk.pause_on = on
        pk.size = w.p.pause_size
        pk.flow = 0
        pk.dst = p.peer_node
        p.pause_sent[prio] = on
        if on:
            p.pauses_sent += 1
            s.st.pauses += 1
        else:
            s.st.resumes += 1
        q_push(s, p, 0, i)
    nic_kick(s, host)


cdef void _lose_wire(Sim* s, int32_t i) noexcept nogil:
    """The packets of a wire from packet i on (s's pool): lost where they arrive."""
    while i != NIL:
        s.pkts[i].kind = PK_LOST
        i = s.pkts[i].next


cdef void _port_down(Sim* s, int32_t port) noexcept nogil:
    """One end of a link that goes down: `port` (of s's part)."""
    cdef World* w = s.w
    cdef Port* p = &w.ports[port]
    cdef Handoff* h
    cdef int32_t i, prio
    p.down = 1
    p.drop_mask = 0xFF
    _lose_wire(s, p.wire_head)            # in flight to this end: lost where they arrive
    if p.cut:
        # what this end handed off in the open window (its count is this window's: the part
        # runs this event in its turn, which zeroed the counts of the window before)
        h = &w.handoff[p.handoff]
        for i in range(p.handoff_n):
            h.pk[i].kind = PK_LOST
    if p.is_switch:
        s.st.link_drops += switch_flush(s, port, 0xFF)
    else:
        for prio in range(NPRIO):
            while p.q_mask & ((<uint32_t> 1) << prio):
                pkt_free(s, q_pop(s, p, prio))
                s.st.link_drops += 1
    for prio in range(NPRIO):             # no PAUSE outlives its link
        if (p.paused_mask >> prio) & 1:
            port_set_paused(s, port, prio, False)
        p.pause_sent[prio] = 0
    p.pfc_pending = 0
    p.pfc_state = 0


cdef void _port_up(Sim* s, int32_t port) noexcept nogil:
    cdef Port* p = &s.w.ports[port]
    p.down = 0
    p.drop_mask = 0
    if p.is_switch:
        port_kick(s, port, s.now)
    else:
        nic_kick(s, p.node)


cdef void _link_end(Sim* s, Fault* f, int32_t port) noexcept nogil:
    """A link fault at one end of the link, `port`, if it is s's part's to apply."""
    if port_sim(s, port) != s:
        return                            # the other end's part applies it
    if f.kind == F_LINK_DOWN:
        _port_down(s, port)
    elif f.kind == F_LINK_UP:
        _port_up(s, port)
    elif f.kind == F_LINK_RATE:
        s.w.ports[port].rate_bps = f.value


cdef void fault_apply(Sim* s, int32_t k) noexcept nogil:
    cdef World* w = s.w
    cdef FaultState* st = <FaultState*> w.faults
    cdef Fault* f
    if st == NULL or k < 0 or k >= st.n:
        return
    f = &st.f[k]
    if f.kind == F_NIC_STOP or f.kind == F_NIC_RESUME:
        # the host port's drop_mask marks the priorities its stopped NIC no longer drains
        st.rx_room[f.target] = f.value
        w.ports[w.hosts[f.target].port].drop_mask = \
            <uint8_t> (w.p.pfc_mask & 0xFE) if f.kind == F_NIC_STOP else 0
        _nic_pfc(s, f.target, f.kind == F_NIC_STOP)
        return
    _link_end(s, f, f.target)
    _link_end(s, f, w.ports[f.target].peer)


cdef void fault_lost_arrival(Sim* s, int32_t port, int32_t i) noexcept nogil:
    """Packet i, on a wire when its link went down, reached `port`: it is lost."""
    s.st.link_drops += 1


cdef void fault_nic_arrival(Sim* s, int32_t port, int32_t i) noexcept nogil:
    """Packet i reached host port `port`, whose NIC has stopped draining some priorities:
    its buffer takes what was on the way, and drops data beyond."""
    cdef World* w = s.w
    cdef FaultState* st = <FaultState*> w.faults
    cdef Packet* pk = &s.pkts[i]
    cdef int32_t host = w.ports[port].node
    if st != NULL and pk.kind == PK_DATA and (w.ports[port].drop_mask >> pk.prio) & 1:
        if st.rx_room[host] < pk.size:
            s.st.nic_drops += 1
            pkt_free(s, i)
            return
        st.rx_room[host] -= pk.size
    nic_receive(s, host, i)
