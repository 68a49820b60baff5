# cython: language_level=3
"""Ports and links: egress queues, the transmitter, and the wire.

A packet that starts transmission at time t on a port of rate r and propagation
delay d is fully received by the peer at t + ceil(8 * size * 1e12 / r) + d
(store-and-forward: the far end acts on the last bit).  With `nic.serialization:
whole_ns` (NetParams.tx_quantum = 1000 ps) the wire time, and a NIC's pacing interval, are
instead rounded down to whole nanoseconds, as ns-3 runs (the HPCC fork) have them.
The packets on a wire keep their order, so the port they go to keeps them in a FIFO with
a single pending EV_ARRIVE event for the head: one heap entry per busy wire, not per
packet.  (Kept at the receiving end, they are read and written where they arrive: in a run
in parts, by the receiving part only.)

A run in parts (issue 20): a port whose link joins two parts is *cut*.  Its sender's part
does not put a packet on the wire but copies it into the port's hand-off record
(`World.handoff`) and frees it, counting it in its port (`Port.handoff_n`); when it next
runs, the receiving part takes the copies, as many as window.pyx tells it, into its own
pool and onto the wire of its own port (`handoff_take`), which its EV_ARRIVE pops.
"""
from libc.stdint cimport int64_t, int32_t, uint32_t
from libc.stdlib cimport realloc, free
from libc.string cimport memcpy
from posix.stdlib cimport posix_memalign
from rocesim._core.defs cimport (Sim, World, Port, Packet, IntHop, Handoff, NIL, EV_ARRIVE, EV_TX, ERR_NOMEM,
                                 MAX_INT_HOPS)
from rocesim._core.events cimport ev_push
from rocesim._core.pool cimport pkt_free, pkt_alloc
from rocesim._core.timeline cimport timeline_add
from rocesim._core.bits cimport rocesim_ctz64

cdef extern from *:
    void __builtin_prefetch(const void* addr) nogil

cdef inline int64_t tx_time(int64_t nbytes, int64_t rate_bps) noexcept nogil:
    """Serialization time in ps, rounded up so that a link never beats its rate."""
    return (nbytes * 8000000000000LL + rate_bps - 1) // rate_bps   # 8 bit/B x 1e12 ps/s


cdef inline int64_t wire_time(Sim* s, int64_t nbytes, int64_t rate_bps) noexcept nogil:
    """Serialization time in ps of a packet put on a wire or paced by a NIC: tx_time, or
    with w.p.tx_quantum > 0 the exact time rounded down to a multiple of it."""
    cdef World* w = s.w
    cdef int64_t t
    if w.p.tx_quantum <= 0:
        return tx_time(nbytes, rate_bps)
    t = nbytes * 8000000000000LL // rate_bps
    return t - t % w.p.tx_quantum


cdef inline void q_push(Sim* s, Port* p, int32_t prio, int32_t i) noexcept nogil:
    s.pkts[i].next = NIL
    if p.q_tail[prio] == NIL:
        p.q_head[prio] = i
    else:
        s.pkts[p.q_tail[prio]].next = i
    p.q_tail[prio] = i
    p.q_mask |= (<uint32_t> 1) << prio
    p.q_bytes[prio] += s.pkts[i].size


cdef inline int32_t q_pop(Sim* s, Port* p, int32_t prio) noexcept nogil:
    cdef int32_t i = p.q_head[prio]
    p.q_head[prio] = s.pkts[i].next
    if p.q_head[prio] == NIL:
        p.q_tail[prio] = NIL
        p.q_mask &= ~((<uint32_t> 1) << prio)
    p.q_bytes[prio] -= s.pkts[i].size
    s.pkts[i].next = NIL
    return i


cdef inline void port_kick(Sim* s, int32_t port, int64_t t) noexcept nogil:
    """Make sure the transmitter of `port` looks for work at max(t, busy_until).  The
    EV_TX carries the packet likely to go then (the head of its lowest-numbered queue
    with packets, or NIL): only a hint, for the event loop to start fetching it one event
    ahead (a queued packet is rarely still in cache when its turn comes)."""
    cdef Port* p = &s.w.ports[port]
    if t < p.busy_until:
        t = p.busy_until
    if p.tx_event != NIL and p.tx_event <= t:
        return
    p.tx_event = t
    ev_push(s, t, EV_TX, port, p.q_head[rocesim_ctz64(p.q_mask)] if p.q_mask else NIL)


cdef inline void _wire_append(Sim* s, int32_t port, int32_t* head, int32_t* tail, int32_t i) noexcept nogil:
    """Packet i (its arrival time set) joins the wire (head, tail) into `port`: an EV_ARRIVE
    if the wire was empty, else the arrival time in the packet ahead of it."""
    s.pkts[i].next = NIL
    if tail[0] == NIL:
        head[0] = i
        ev_push(s, s.pkts[i].time, EV_ARRIVE, port, i)
    else:
        s.pkts[tail[0]].next = i
        s.pkts[tail[0]].next_time = s.pkts[i].time
    tail[0] = i


cdef inline void port_transmit(Sim* s, int32_t port, int32_t i) noexcept nogil:
    """Put packet i on the wire from `port` now (the transmitter must be free); packet i is
    no longer the caller's (a cut port's goes to its hand-off record)."""
    cdef World* w = s.w
    cdef Port* p = &w.ports[port]
    cdef Port* to
    cdef Packet* pk = &s.pkts[i]
    cdef int64_t done = s.now + wire_time(s, pk.size, p.rate_bps)
    p.busy_until = done
    p.tx_bytes += pk.size
    p.tx_pkts += 1
    pk.time = done + p.delay_ps
    if p.cut:
        handoff_put(s, p, i)
        return
    to = &w.ports[p.peer]              # (the wire is kept where it arrives)
    _wire_append(s, p.peer, &to.wire_head, &to.wire_tail, i)


cdef inline int32_t _wire_take(Sim* s, int32_t port, int32_t* head, int32_t* tail) noexcept nogil:
    cdef int32_t i = head[0]
    cdef Packet* pk = &s.pkts[i]
    head[0] = pk.next
    if head[0] == NIL:
        tail[0] = NIL
    else:
        # the next packet's arrival time travels in this one: no need to touch it now,
        # only to start fetching it for when it arrives
        ev_push(s, pk.next_time, EV_ARRIVE, port, head[0])
        __builtin_prefetch(&s.pkts[head[0]])
    pk.next = NIL
    return i


cdef inline int32_t wire_pop(Sim* s, int32_t port) noexcept nogil:
    """Take the packet that has just reached `port` by its wire."""
    cdef Port* p = &s.w.ports[port]
    return _wire_take(s, port, &p.wire_head, &p.wire_tail)


# --- hand-offs across a cut link (a run in parts) ---------------------------------------

cdef inline int _handoff_grow(Sim* s, Handoff* h, int32_t n) noexcept nogil:
    """Double the room of a hand-off record's buffers (which hold n packets); -1 if out of
    memory.  The packets on 64-byte boundaries: a copy is one cache line, not two."""
    cdef World* w = s.w
    cdef int32_t cap = 2 * h.cap if h.cap else 16
    cdef void* grown = NULL
    if posix_memalign(&grown, 64, <size_t> cap * sizeof(Packet)) != 0:
        return -1
    if n:
        memcpy(grown, h.pk, <size_t> n * sizeof(Packet))
    free(h.pk)
    h.pk = <Packet*> grown
    if w.p.int_enabled:
        grown = realloc(h.hops, <size_t> cap * MAX_INT_HOPS * sizeof(IntHop))
        if grown == NULL:
            return -1
        h.hops = <IntHop*> grown
    if w.p.sack_carried:
        grown = realloc(h.sack, <size_t> cap * sizeof(int64_t))
        if grown == NULL:
            return -1
        h.sack = <int64_t*> grown
    h.cap = cap
    return 0


cdef inline void handoff_put(Sim* s, Port* p, int32_t i) noexcept nogil:
    """The sender's part: a copy of packet i (with its INT records and SACK) goes into the
    hand-off record of cut port `p`, counted in `p.handoff_n`, and packet i back to the
    sender's pool.  The part lists the records it writes in a window (`Sim.sent`, for
    window.pyx, which zeroes their counts when the part first runs in the next window)."""
    cdef World* w = s.w
    cdef Handoff* h = &w.handoff[p.handoff]
    cdef int32_t n = p.handoff_n
    if n == 0:
        s.sent[s.n_sent] = h.port
        s.n_sent += 1
    if n == h.cap and _handoff_grow(s, h, n) < 0:
        s.error = ERR_NOMEM
    else:
        h.pk[n] = s.pkts[i]
        if w.p.int_enabled and s.pkts[i].nhops:
            memcpy(&h.hops[<int64_t> n * MAX_INT_HOPS], &s.int_hops[<int64_t> i * MAX_INT_HOPS],
                   s.pkts[i].nhops * sizeof(IntHop))
        if w.p.sack_carried:
            h.sack[n] = s.pkt_sack[i]
        p.handoff_n = n + 1
    pkt_free(s, i)


cdef inline int handoff_take(Sim* s, Handoff* h, int32_t n) noexcept nogil:
    """The receiving part `s`: the first `n` packets of hand-off record `h`, in send order,
    into its pool and onto the wire its port `h.peer` keeps (fresh seqs from its counter).
    -1 if out of memory."""
    cdef World* w = s.w
    cdef Port* to = &w.ports[h.peer]
    cdef int32_t j, i
    for j in range(n):
        i = pkt_alloc(s)
        if i == NIL:
            return -1
        s.pkts[i] = h.pk[j]
        if w.p.int_enabled and h.pk[j].nhops:
            memcpy(&s.int_hops[<int64_t> i * MAX_INT_HOPS], &h.hops[<int64_t> j * MAX_INT_HOPS],
                   h.pk[j].nhops * sizeof(IntHop))
        if w.p.sack_carried:
            s.pkt_sack[i] = h.sack[j]
        _wire_append(s, h.peer, &to.wire_head, &to.wire_tail, i)
    return 0


cdef inline void port_set_paused(Sim* s, int32_t port, int32_t prio, bint on) noexcept nogil:
    """A PAUSE (on) or RESUME (off) frame for `prio` reached this port's transmitter."""
    cdef Port* p = &s.w.ports[port]
    cdef uint32_t bit = (<uint32_t> 1) << prio
    if on:
        p.xoff_rx |= bit
    else:
        p.xoff_rx &= ~bit
    if on and (p.pause_ignore & bit):
        return                          # the PFC watchdog's `forward` action ignores PAUSE
    if on and not (p.paused_mask & bit):
        p.paused_mask |= bit
        p.paused_since[prio] = s.now
    elif not on and (p.paused_mask & bit):
        p.paused_mask &= ~bit
        p.paused_ps[prio] += s.now - p.paused_since[prio]
        timeline_add(s, port, prio, p.paused_since[prio], s.now)
        port_kick(s, port, s.now)
