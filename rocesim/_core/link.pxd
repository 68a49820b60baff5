# cython: language_level=3
"""Ports and links: egress queues, the transmitter, and the wire.

A packet that starts transmission at time t on a port of rate r and propagation
delay d is fully received by the peer at t + ceil(8 * size * 1e12 / r) + d
(store-and-forward: the far end acts on the last bit).  With `nic.serialization:
whole_ns` (Sim.p.tx_quantum = 1000 ps) the wire time, and a NIC's pacing interval, are
instead rounded down to whole nanoseconds, as ns-3 runs (the HPCC fork) have them.
The packets on a wire keep their order, so each port keeps them in a FIFO with a
single pending EV_ARRIVE event for the head: one heap entry per busy wire, not per
packet.
"""
from libc.stdint cimport int64_t, int32_t, uint32_t
from rocesim._core.defs cimport (Sim, Port, Packet, NIL, EV_ARRIVE, EV_TX)
from rocesim._core.events cimport ev_push
from rocesim._core.timeline cimport timeline_add

cdef extern from *:
    void __builtin_prefetch(const void* addr) nogil

cdef inline int64_t tx_time(int64_t nbytes, int64_t rate_bps) noexcept nogil:
    """Serialization time in ps, rounded up so that a link never beats its rate."""
    return (nbytes * 8000000000000LL + rate_bps - 1) // rate_bps   # 8 bit/B x 1e12 ps/s


cdef inline int64_t wire_time(Sim* s, int64_t nbytes, int64_t rate_bps) noexcept nogil:
    """Serialization time in ps of a packet put on a wire or paced by a NIC: tx_time, or
    with s.p.tx_quantum > 0 the exact time rounded down to a multiple of it."""
    cdef int64_t t
    if s.p.tx_quantum <= 0:
        return tx_time(nbytes, rate_bps)
    t = nbytes * 8000000000000LL // rate_bps
    return t - t % s.p.tx_quantum


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
    """Make sure the transmitter of `port` looks for work at max(t, busy_until)."""
    cdef Port* p = &s.ports[port]
    if t < p.busy_until:
        t = p.busy_until
    if p.tx_event != NIL and p.tx_event <= t:
        return
    p.tx_event = t
    ev_push(s, t, EV_TX, port, 0)


cdef inline void port_transmit(Sim* s, int32_t port, int32_t i) noexcept nogil:
    """Put packet i on the wire of `port` now (the transmitter must be free)."""
    cdef Port* p = &s.ports[port]
    cdef Packet* pk = &s.pkts[i]
    cdef int64_t done = s.now + wire_time(s, pk.size, p.rate_bps)
    p.busy_until = done
    p.tx_bytes += pk.size
    p.tx_pkts += 1
    pk.time = done + p.delay_ps
    pk.next = NIL
    if p.wire_tail == NIL:
        p.wire_head = i
        ev_push(s, pk.time, EV_ARRIVE, port, i)
    else:
        s.pkts[p.wire_tail].next = i
        s.pkts[p.wire_tail].next_time = pk.time
    p.wire_tail = i


cdef inline int32_t wire_pop(Sim* s, int32_t port) noexcept nogil:
    """Take the packet that has just reached the far end of `port`'s wire."""
    cdef Port* p = &s.ports[port]
    cdef int32_t i = p.wire_head
    cdef Packet* pk = &s.pkts[i]
    p.wire_head = pk.next
    if p.wire_head == NIL:
        p.wire_tail = NIL
    else:
        # the next packet's arrival time travels in this one: no need to touch it now,
        # only to start fetching it for when it arrives
        ev_push(s, pk.next_time, EV_ARRIVE, port, p.wire_head)
        __builtin_prefetch(&s.pkts[p.wire_head])
    pk.next = NIL
    return i


cdef inline void port_set_paused(Sim* s, int32_t port, int32_t prio, bint on) noexcept nogil:
    """A PAUSE (on) or RESUME (off) frame for `prio` reached this port's transmitter."""
    cdef Port* p = &s.ports[port]
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
