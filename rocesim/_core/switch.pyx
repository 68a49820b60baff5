# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""A store-and-forward switch: forwarding, egress scheduling, INT stamping.

Scheduling at an egress port, in order: a pending PFC frame; queue 0 (control) by
strict priority; then the data queues 1..7 round-robin, skipping those the peer
paused.  ECN marking and INT stamping happen at dequeue, when the packet starts
its transmission, as in the HPCC ns-3 fork.  With trimming on (trim.pxd), a data packet
the buffer would refuse, or above the trimming threshold, goes on as its header.
"""
from libc.stdint cimport int64_t, int32_t, uint32_t, uint8_t
from rocesim._core.defs cimport (Sim, World, Switch, Port, Packet, IntHop, NIL, NPRIO,
                                 MAX_INT_HOPS, PK_DATA, PK_TRIMMED, PK_PAUSE)
from rocesim._core.link cimport q_push, q_pop, port_kick, port_transmit
from rocesim._core.pool cimport pkt_alloc, pkt_free, pkt_hops
from rocesim._core.routing cimport route_lookup, flow_hash, flow_rhash, flow_path_off, with_entropy
from rocesim._core.mmu cimport mmu_admit, mmu_release, mmu_ecn_mark
from rocesim._core.trim cimport trim_over, trim, trim_refused
from rocesim._core.bits cimport rocesim_ctz64


cdef inline void _drop(Sim* s, int32_t in_port, int32_t i) noexcept nogil:
    s.st.buffer_drops += 1
    s.w.ports[in_port].buffer_drops += 1
    pkt_free(s, i)


cdef void switch_receive(Sim* s, int32_t in_port, int32_t i) noexcept nogil:
    """Packet i has fully arrived at a switch by `in_port`: route, admit, enqueue."""
    cdef World* w = s.w
    cdef Packet* pk = &s.pkts[i]
    cdef Switch* sw = &w.sw[w.ports[in_port].node - w.n_hosts]
    cdef int32_t out
    cdef Port* p
    if pk.ttl <= 1:
        s.st.ttl_drops += 1
        pkt_free(s, i)
        return
    pk.ttl -= 1
    if pk.kind == PK_DATA or pk.kind == PK_TRIMMED:     # a trimmed header keeps its packet's way
        out = route_lookup(s, sw, pk.dst, with_entropy(flow_hash(w, pk.flow), pk.entropy),
                           flow_path_off(s, pk.flow), pk.hop, pk)
    else:
        # ACKs, NACKs and CNPs are balanced as data is: a switch cannot tell them from data
        # (RoCEv2 UDP to port 4791 alike; csg-htsim's FatTreeSwitch::getNextHop routes every
        # packet by its strategy).  Hashed while data sprays, they collide on some uplinks of
        # a fully loaded fabric and hold its permutations to 90% (issue 31, Measured).
        out = route_lookup(s, sw, pk.dst, flow_rhash(w, pk.flow), NIL, 0, pk)
    pk.hop += 1
    pk.in_prio = pk.prio
    if w.p.bounce_priority and pk.kind == PK_DATA and out != NIL and w.ports[in_port].uplink \
            and w.ports[out].uplink:
        _bounce(s, pk)
    if out == NIL or ((w.ports[in_port].drop_mask | w.ports[out].drop_mask) >> pk.prio) & 1:
        if out != NIL and w.ports[out].down:
            s.st.link_drops += 1                 # routed to a link that is down
            pkt_free(s, i)
        elif out != NIL:
            s.st.watchdog_drops += 1             # the PFC watchdog drops this priority here
            w.ports[out if (w.ports[out].drop_mask >> pk.prio) & 1 else in_port].wd_dropped += 1
            pkt_free(s, i)
        else:
            s.st.no_route_drops += 1             # no route (a link down, or off an explicit path)
            pkt_free(s, i)
        return
    if w.p.trim_mask and trim_over(s, out, pk):
        trim(s, out, pk)
    if not mmu_admit(s, sw, in_port, out, pk.in_prio, pk.prio, pk.size) and not trim_refused(s, sw, in_port, out, pk):
        _drop(s, in_port, i)
        return
    pk.in_port = in_port
    p = &w.ports[out]
    q_push(s, p, pk.prio, i)
    if p.tx_event == NIL and p.busy_until <= s.now:
        switch_port_tx(s, out)
    else:
        port_kick(s, out, s.now)


cdef inline void _bounce(Sim* s, Packet* pk) noexcept nogil:
    """Deadlock avoidance: the packet came down from an upper layer and goes up again, which
    up-down routing never does (a failure or a stale route made it): it moves to another
    priority, so that its buffer dependencies cannot close a cycle with the traffic it
    meets (Tagger, Hu et al., CoNEXT 2017: a new lossless class per bounce; or a lossy
    class).  Its PFC accounting here stays with the priority it came in with."""
    cdef World* w = s.w
    if w.p.bounce_priority > 0:
        pk.prio = <uint8_t> w.p.bounce_priority
    elif pk.prio < NPRIO - 1:
        pk.prio += 1


cdef int64_t switch_flush(Sim* s, int32_t port, uint32_t prio_mask) noexcept nogil:
    """Drop every packet queued at switch port `port` for the priorities in `prio_mask`
    (its link went down, or the PFC watchdog flushes a stormed queue); returns how many."""
    cdef World* w = s.w
    cdef Port* p = &w.ports[port]
    cdef Switch* sw = &w.sw[p.node - w.n_hosts]
    cdef int32_t prio, i
    cdef int64_t n = 0
    for prio in range(NPRIO):
        if not (prio_mask >> prio) & 1:
            continue
        while p.q_mask & ((<uint32_t> 1) << prio):
            i = q_pop(s, p, prio)
            mmu_release(s, sw, &s.pkts[i])
            pkt_free(s, i)
            n += 1
    return n


cdef inline bint _send_pfc_frame(Sim* s, int32_t port) noexcept nogil:
    """Transmit the lowest-priority pending PAUSE/RESUME frame of `port`."""
    cdef World* w = s.w
    cdef Port* p = &w.ports[port]
    cdef int32_t prio = 0
    cdef int32_t i
    while not ((p.pfc_pending >> prio) & 1):
        prio += 1
    p.pfc_pending &= ~(1 << prio)
    i = pkt_alloc(s)
    if i == NIL:
        return False
    pk = &s.pkts[i]
    pk.kind = PK_PAUSE
    pk.prio = prio
    pk.pause_on = (p.pfc_state >> prio) & 1
    pk.size = w.p.pause_size
    pk.flow = 0
    pk.dst = p.peer_node
    if pk.pause_on:
        p.pauses_sent += 1
        s.st.pauses += 1
    else:
        s.st.resumes += 1
    port_transmit(s, port, i)
    return True


cdef inline void _stamp_int(Sim* s, Port* p, Packet* pk, int32_t i) noexcept nogil:
    cdef IntHop* h
    if pk.nhops >= MAX_INT_HOPS:
        return
    h = &pkt_hops(s, i)[pk.nhops]
    h.ts = s.now
    h.tx_bytes = p.tx_bytes
    # the whole port's queue after this packet left, as the HPCC fork stamps it
    h.qlen = <int32_t> (p.q_bytes[0] + p.q_bytes[1] + p.q_bytes[2] + p.q_bytes[3]
                        + p.q_bytes[4] + p.q_bytes[5] + p.q_bytes[6] + p.q_bytes[7])
    h.rate_mbps = <int32_t> (p.rate_bps // 1000000)
    pk.nhops += 1


cdef void switch_port_tx(Sim* s, int32_t port) noexcept nogil:
    """The transmitter of switch port `port` is free: send the next packet, if any."""
    cdef World* w = s.w
    cdef Port* p = &w.ports[port]
    cdef uint32_t ready, later
    cdef int32_t prio, i
    cdef Packet* pk
    if p.down:
        return                                    # link down: nothing leaves (faults.pyx)
    if p.pfc_pending:
        _send_pfc_frame(s, port)
    else:
        ready = p.q_mask & ~p.paused_mask
        if ready & 1:
            prio = 0
        elif ready:
            # round robin over 1..7: the first ready queue after p.rr, else the lowest
            later = ready & ~((<uint32_t> 2 << p.rr) - 1)
            prio = rocesim_ctz64(later if later else ready)
            p.rr = prio
        else:
            return
        i = q_pop(s, p, prio)
        pk = &s.pkts[i]
        mmu_release(s, &w.sw[p.node - w.n_hosts], pk)
        if pk.kind == PK_DATA:
            if mmu_ecn_mark(s, port, prio):
                pk.ecn = 1
                p.ecn_marks += 1
            if w.p.int_enabled:
                _stamp_int(s, p, pk, i)
        port_transmit(s, port, i)
    if p.pfc_pending or (p.q_mask & ~p.paused_mask):
        port_kick(s, port, p.busy_until)
