# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The RDMA NIC: queue pairs, pacing, ACK/NACK/CNP, loss recovery.

Sender.  One queue pair per flow.  When the port's transmitter is free the NIC
sends, in order: a queued control packet (ACK/NACK/CNP, strict priority), then one
data packet of the next flow, round-robin, that is allowed to send: its priority
is not paused by PFC, its window is open (bytes in flight snd_nxt - snd_una below
`window`, checked before the packet as the HPCC fork does) and its pacing time has
come (after a packet of S wire bytes the next may leave S * 8 / rate later).  If
none can send, the NIC wakes at the earliest pacing time.

Receiver.  In-order data advances rcv_nxt and is ACKed every `ack_every` packets
(and always at the last byte).  Go-back-N (default): out-of-order data is
discarded and answered by a NACK carrying rcv_nxt, at most once per
`nack_interval` for the same rcv_nxt (the HPCC fork's rule, 500 us); the sender
rewinds snd_nxt to it.  Selective repeat (IRN-style, for lossy RoCE): the
receiver keeps out-of-order packets and NACKs each one with its sequence (a
SACK); the sender retransmits the holes below the highest SACK before new data.
Duplicates are ACKed (so a lost final ACK is recovered by the timeout).
ECN-marked data makes the receiver send a CNP, at most once per `cnp_interval`
per flow, when the scheme asks for CNPs (DCQCN).

Timeout.  If a flow's cumulative ACK does not move for `rto`, the sender goes back
to snd_una (go-back-N) or retransmits every unSACKed packet (selective repeat).
The HPCC fork has no timeout; it matters only when packets are lost.
"""
from libc.stdint cimport int64_t, int32_t, uint32_t, uint8_t, INT64_MAX
from libc.stdlib cimport realloc, calloc
from libc.string cimport memcpy
from rocesim._core.defs cimport (Sim, Port, Packet, Flow, Host, AckInfo, IntHop, NIL, NPRIO,
                                 ERR_NOMEM, PK_DATA, PK_ACK, PK_NACK, PK_CNP,
                                 FS_ACTIVE, FS_DONE, EV_RTO, MAX_INT_HOPS)
from rocesim._core.link cimport q_push, q_pop, port_kick, port_transmit, tx_time
from rocesim._core.pool cimport pkt_alloc, pkt_free
from rocesim._core.heap cimport heap_push
from rocesim._core.flows cimport flow_delivered, flow_activate, flow_finish


# --- the host's set of flows with data to send ---------------------------------------

cdef inline void _active_add(Sim* s, int32_t f) noexcept:
    cdef Flow* fl = &s.flows[f]
    cdef Host* h = &s.hosts[fl.src]
    cdef int32_t* grown
    cdef int32_t cap
    if fl.in_active:
        return
    if h.n_active == h.cap_active:
        cap = 8 if h.cap_active == 0 else 2 * h.cap_active
        grown = <int32_t*> realloc(h.active, cap * sizeof(int32_t))
        if grown == NULL:
            s.error = ERR_NOMEM
            return
        h.active = grown
        h.cap_active = cap
    h.active[h.n_active] = f
    h.n_active += 1
    h.prio_active[fl.prio] += 1
    fl.in_active = 1


cdef inline void _active_remove_at(Sim* s, Host* h, int32_t idx) noexcept:
    s.flows[h.active[idx]].in_active = 0
    h.prio_active[s.flows[h.active[idx]].prio] -= 1
    h.n_active -= 1
    h.active[idx] = h.active[h.n_active]


cdef inline void _active_remove(Sim* s, int32_t f) noexcept:
    cdef Host* h = &s.hosts[s.flows[f].src]
    cdef int32_t k
    for k in range(h.n_active):
        if h.active[k] == f:
            _active_remove_at(s, h, k)
            if h.rr >= h.n_active:
                h.rr = 0
            return


cdef void nic_kick(Sim* s, int32_t host) noexcept:
    """Let the NIC of `host` send now if its transmitter is idle."""
    cdef int32_t port = s.hosts[host].port
    cdef Port* p = &s.ports[port]
    if p.tx_event == NIL and p.busy_until <= s.now:
        nic_port_tx(s, port)
    else:
        port_kick(s, port, s.now)


# --- selective-repeat bitmaps (one bit per packet, allocated on first loss) ---------

cdef inline bint _bit(uint8_t* bits, int64_t len, int64_t k) noexcept:
    return bits != NULL and k < len * 8 and (bits[k >> 3] >> (k & 7)) & 1


cdef inline bint _bits_alloc(Sim* s, uint8_t** bits, int64_t* len, Flow* fl) noexcept:
    """Allocate a zeroed bitmap with one bit per packet of the flow, if not yet done."""
    cdef int64_t n
    if bits[0] == NULL:
        n = ((fl.size + s.p.mtu - 1) // s.p.mtu + 7) // 8
        bits[0] = <uint8_t*> calloc(n, 1)
        if bits[0] == NULL:
            s.error = ERR_NOMEM
            return False
        len[0] = n
    return True


cdef inline void _set_bit(Sim* s, uint8_t** bits, int64_t* len, Flow* fl, int64_t k) noexcept:
    if _bits_alloc(s, bits, len, fl) and k < len[0] * 8:
        bits[0][k >> 3] |= <uint8_t> (1 << (k & 7))


# --- sender ------------------------------------------------------------------------

cdef inline int64_t _next_seq(Sim* s, Flow* fl) noexcept:
    """The byte offset the flow would send next, or -1 if it has nothing to send."""
    cdef int64_t mtu = s.p.mtu
    if fl.sack_bits != NULL:
        if fl.recovery_end != NIL:
            if fl.retx_nxt < fl.snd_una:
                fl.retx_nxt = fl.snd_una
            while (fl.retx_nxt < fl.sack_high
                   and _bit(fl.sack_bits, fl.sack_bits_len, fl.retx_nxt // mtu)):
                fl.retx_nxt += mtu
            if fl.retx_nxt < fl.sack_high:
                return fl.retx_nxt
        while fl.snd_nxt < fl.size and _bit(fl.sack_bits, fl.sack_bits_len, fl.snd_nxt // mtu):
            fl.snd_nxt += mtu
    if fl.snd_nxt < fl.size:
        return fl.snd_nxt
    return -1


cdef inline void _send_data(Sim* s, int32_t port, int32_t f, int64_t seq) noexcept:
    cdef Flow* fl = &s.flows[f]
    cdef int32_t i = pkt_alloc(s)
    cdef Packet* pk
    cdef int64_t payload, end, rate
    if i == NIL:
        return
    pk = &s.pkts[i]
    payload = fl.size - seq
    if payload > s.p.mtu:
        payload = s.p.mtu
    end = seq + payload
    pk.kind = PK_DATA
    pk.flow = f
    pk.src = fl.src
    pk.dst = fl.dst
    pk.prio = fl.prio
    pk.seq = seq
    pk.ts = s.now
    pk.payload = <int32_t> payload
    pk.size = <int32_t> payload + s.p.data_hdr + (s.p.int_bytes if s.p.int_enabled else 0)
    pk.ttl = s.p.ttl
    if fl.snd_una >= fl.snd_max:
        fl.rto_deadline = s.now + s.p.rto    # nothing was outstanding: the timeout starts now
    if seq < fl.snd_max:
        fl.retx_bytes += payload
        s.st.retx_bytes += payload
    if seq == fl.snd_nxt:
        fl.snd_nxt = end
    else:
        fl.retx_nxt = end            # a selective-repeat retransmission
    if end > fl.snd_max:
        fl.snd_max = end
    rate = fl.rate_bps if fl.rate_bps > 0 else 1
    fl.next_send = s.now + tx_time(pk.size, rate)
    fl.last_send = s.now
    fl.last_size = pk.size
    s.st.data_pkts_sent += 1
    port_transmit(s, port, i)


cdef void nic_port_tx(Sim* s, int32_t port) noexcept:
    """The transmitter of host port `port` is free: send the next packet, if any."""
    cdef Port* p = &s.ports[port]
    cdef Host* h = &s.hosts[p.node]
    cdef uint32_t ready = p.q_mask & ~p.paused_mask
    cdef int32_t prio, idx, k, n, f, i
    cdef Flow* fl
    cdef int64_t seq, earliest = INT64_MAX
    if ready:
        prio = 0
        while not ((ready >> prio) & 1):
            prio += 1
        i = q_pop(s, p, prio)
        port_transmit(s, port, i)
        port_kick(s, port, p.busy_until)
        return
    n = h.n_active
    for prio in range(1, NPRIO):                   # nothing to scan if PFC paused them all
        if h.prio_active[prio] and not ((p.paused_mask >> prio) & 1):
            break
    else:
        return                                     # a RESUME will kick the port
    idx = h.rr if h.rr < n else 0
    for k in range(n):
        f = h.active[idx]
        fl = &s.flows[f]
        if not ((p.paused_mask >> fl.prio) & 1):
            seq = _next_seq(s, fl)
            if seq >= 0 and (seq != fl.snd_nxt or fl.window == 0
                             or fl.snd_nxt - fl.snd_una < fl.window):
                if fl.next_send <= s.now:
                    _send_data(s, port, f, seq)
                    if _next_seq(s, fl) < 0:
                        _active_remove_at(s, h, idx)   # idx now holds a flow yet to be served
                        h.rr = idx if idx < h.n_active else 0
                    else:
                        h.rr = idx + 1 if idx + 1 < h.n_active else 0
                    port_kick(s, port, p.busy_until)
                    return
                if fl.next_send < earliest:
                    earliest = fl.next_send
        idx += 1
        if idx == n:
            idx = 0
    if earliest != INT64_MAX:
        port_kick(s, port, earliest)


cdef void nic_rate_changed(Sim* s, int32_t f, int64_t old_rate) noexcept:
    """The scheme changed the flow's rate: the next packet is due a packet time at the new
    rate after the last one (not at the old rate), as the HPCC fork's ChangeRate does."""
    cdef Flow* fl = &s.flows[f]
    cdef int64_t rate = fl.rate_bps if fl.rate_bps > 0 else 1
    if fl.rate_bps == old_rate or fl.state != FS_ACTIVE or fl.last_size == 0:
        return
    fl.next_send = fl.last_send + tx_time(fl.last_size, rate)
    if fl.in_active:
        port_kick(s, s.hosts[fl.src].port, fl.next_send if fl.next_send > s.now else s.now)


cdef void nic_start_flow(Sim* s, int32_t f) noexcept:
    """Flow f is released now: open its queue pair and start sending."""
    cdef Flow* fl = &s.flows[f]
    flow_activate(s, f)
    fl.snd_nxt = 0
    fl.snd_una = 0
    fl.snd_max = 0
    fl.next_send = s.now
    fl.recovery_end = NIL
    fl.rate_bps = fl.line_rate
    fl.window = 0
    s.cc.on_start(s, f)
    _active_add(s, f)
    fl.rto_deadline = s.now + s.p.rto
    if s.p.rto > 0 and not fl.rto_armed:
        fl.rto_armed = 1
        heap_push(s, fl.rto_deadline, EV_RTO, f, 0)
    nic_kick(s, fl.src)


cdef void nic_rto(Sim* s, int32_t f) noexcept:
    """Retransmission-timeout check of flow f."""
    cdef Flow* fl = &s.flows[f]
    cdef int64_t rate
    fl.rto_armed = 0
    if fl.state != FS_ACTIVE:
        return
    if s.now >= fl.rto_deadline and fl.snd_una < fl.snd_max:
        s.st.timeouts += 1
        fl.n_timeouts += 1
        if s.p.selective_repeat:
            # retransmit every packet the receiver has not reported, up to snd_max
            fl.recovery_end = fl.snd_max
            fl.sack_high = fl.snd_max
            fl.retx_nxt = fl.snd_una
            _bits_alloc(s, &fl.sack_bits, &fl.sack_bits_len, fl)
        else:
            fl.snd_nxt = fl.snd_una
        rate = fl.rate_bps
        s.cc.on_timeout(s, f)
        nic_rate_changed(s, f, rate)
        _active_add(s, f)
        nic_kick(s, fl.src)
        fl.rto_deadline = s.now + s.p.rto
    elif s.now >= fl.rto_deadline:
        fl.rto_deadline = s.now + s.p.rto     # nothing outstanding: keep watching
    fl.rto_armed = 1
    heap_push(s, fl.rto_deadline, EV_RTO, f, 0)


cdef inline void _complete(Sim* s, int32_t f) noexcept:
    flow_finish(s, f)
    if s.flows[f].in_active:
        _active_remove(s, f)


cdef inline void _on_ack(Sim* s, int32_t i) noexcept:
    """ACK or NACK packet i reached the sender of its flow."""
    cdef Packet* pk = &s.pkts[i]
    cdef int32_t f = pk.flow
    cdef Flow* fl = &s.flows[f]
    cdef AckInfo a
    cdef int64_t k, rate
    if fl.state != FS_ACTIVE:
        return
    a.acked = 0
    if pk.seq > fl.snd_una:
        a.acked = pk.seq - fl.snd_una
        fl.snd_una = pk.seq
        fl.rto_deadline = s.now + s.p.rto
        if fl.snd_nxt < fl.snd_una:
            fl.snd_nxt = fl.snd_una
        if fl.recovery_end != NIL and fl.snd_una >= fl.recovery_end:
            fl.recovery_end = NIL
    if pk.kind == PK_ACK:
        a.seq = pk.seq
        a.rtt = s.now - pk.ts
        a.ecn = pk.ecn
        a.nhops = pk.nhops
        a.hops = pk.hops
        rate = fl.rate_bps
        s.cc.on_ack(s, f, &a)
        nic_rate_changed(s, f, rate)
    else:
        if s.p.selective_repeat:
            k = pk.sack // s.p.mtu
            _set_bit(s, &fl.sack_bits, &fl.sack_bits_len, fl, k)
            if pk.sack + s.p.mtu > fl.sack_high:
                fl.sack_high = min(pk.sack + s.p.mtu, fl.size)
            if fl.recovery_end == NIL:
                fl.recovery_end = fl.snd_max
                fl.retx_nxt = fl.snd_una
        elif fl.snd_nxt > pk.seq:
            fl.snd_nxt = pk.seq                 # go-back-N
        rate = fl.rate_bps
        s.cc.on_nack(s, f)
        nic_rate_changed(s, f, rate)
        _active_add(s, f)
    if fl.snd_una >= fl.size:
        _complete(s, f)
    elif fl.in_active:
        nic_kick(s, fl.src)


# --- receiver ----------------------------------------------------------------------

cdef inline void _send_ctrl(Sim* s, int32_t data, int32_t kind) noexcept:
    """Answer data packet `data` with an ACK, NACK or CNP from its receiver."""
    cdef int32_t i = pkt_alloc(s)       # may move the pool: take pointers after it
    cdef Packet* pk
    cdef Packet* d
    cdef Flow* fl
    cdef int32_t port
    if i == NIL:
        return
    pk = &s.pkts[i]
    d = &s.pkts[data]
    fl = &s.flows[d.flow]
    pk.kind = kind
    pk.flow = d.flow
    pk.src = fl.dst
    pk.dst = fl.src
    pk.prio = <uint8_t> (s.p.ack_prio if s.p.ack_prio >= 0 else fl.prio)
    pk.ttl = s.p.ttl
    pk.payload = 0
    pk.seq = fl.rcv_nxt
    pk.sack = d.seq
    pk.ts = d.ts
    pk.ecn = d.ecn
    if kind == PK_CNP:
        pk.size = s.p.cnp_bytes
        s.st.cnps += 1
    else:
        pk.size = s.p.ack_bytes
        if kind == PK_NACK:
            s.st.nacks += 1
        else:
            s.st.acks += 1
        if s.p.int_enabled:
            pk.size = s.p.ack_int_bytes
            pk.nhops = d.nhops
            memcpy(pk.hops, d.hops, d.nhops * sizeof(IntHop))
    port = s.hosts[fl.dst].port
    q_push(s, &s.ports[port], pk.prio, i)
    nic_kick(s, fl.dst)


cdef inline void _on_data(Sim* s, int32_t i) noexcept:
    cdef Packet* pk = &s.pkts[i]
    cdef int32_t f = pk.flow
    cdef Flow* fl = &s.flows[f]
    cdef int64_t mtu = s.p.mtu
    cdef int64_t before
    if pk.ecn and s.cc.needs_cnp and (fl.last_cnp == NIL or s.now - fl.last_cnp >= s.p.cnp_interval):
        fl.last_cnp = s.now
        _send_ctrl(s, i, PK_CNP)
        pk = &s.pkts[i]
    if pk.seq == fl.rcv_nxt:
        before = fl.rcv_nxt
        fl.rcv_nxt += pk.payload
        while fl.rcv_nxt < fl.size and _bit(fl.rx_bits, fl.rx_bits_len, fl.rcv_nxt // mtu):
            fl.rcv_nxt += mtu
        if fl.rcv_nxt > fl.size:
            fl.rcv_nxt = fl.size
        s.st.data_bytes_delivered += fl.rcv_nxt - before
        fl.unacked += 1
        if fl.rcv_nxt >= fl.size:
            fl.unacked = 0
            _send_ctrl(s, i, PK_ACK)
            if fl.rx_finish == NIL:
                fl.rx_finish = s.now
                flow_delivered(s, f)
        elif fl.unacked >= s.p.ack_every:
            fl.unacked = 0
            _send_ctrl(s, i, PK_ACK)
    elif pk.seq > fl.rcv_nxt:
        if s.p.selective_repeat:
            _set_bit(s, &fl.rx_bits, &fl.rx_bits_len, fl, pk.seq // mtu)
            _send_ctrl(s, i, PK_NACK)
        elif fl.last_nack_seq != fl.rcv_nxt or s.now - fl.last_nack >= s.p.nack_interval:
            fl.last_nack_seq = fl.rcv_nxt
            fl.last_nack = s.now
            _send_ctrl(s, i, PK_NACK)
    else:
        _send_ctrl(s, i, PK_ACK)          # duplicate: re-ACK what we have


cdef void nic_receive(Sim* s, int32_t host, int32_t i) noexcept:
    """Packet i has fully arrived at the NIC of `host` (PAUSE frames excepted)."""
    cdef int32_t kind = s.pkts[i].kind, f
    cdef int64_t rate
    if kind == PK_DATA:
        _on_data(s, i)
    elif kind == PK_CNP:
        if s.flows[s.pkts[i].flow].state == FS_ACTIVE:
            f = s.pkts[i].flow
            rate = s.flows[f].rate_bps
            s.cc.on_cnp(s, f)
            nic_rate_changed(s, f, rate)
    else:
        _on_ack(s, i)
    pkt_free(s, i)
