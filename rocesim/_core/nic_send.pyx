# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The NIC's sender: queue pairs, scheduling, pacing, and what ACKs, NACKs and CNPs do.

One queue pair per active flow (qp.pxd), opened when the NIC first sends for it (the
scheme's on_start runs then).  When the port's transmitter is free the NIC sends, in
order: a queued control packet (ACK/NACK/CNP, strict priority), then one data packet
of the next flow, round-robin, that is allowed to send: its priority is not paused by
PFC, its window is open (bytes in flight snd_nxt - snd_una below `window`, checked
before the packet as the HPCC fork does) and its pacing time has come (after a packet
of S wire bytes the next may leave S * 8 / rate later).  If none can send, the NIC
wakes at the earliest pacing time.

An ACK advances snd_una and calls the scheme's on_ack; a NACK rewinds snd_nxt to the
receiver's rcv_nxt (go-back-N) or, under selective repeat, records the SACKed packet
and starts recovery (the holes below the highest SACK go first).

Unordered delivery: an ACK's SACK (the packet it answers, when at or above its cumulative
point) marks the packet delivered in the sender's scoreboard.  A hole (a packet sent and
not SACKed, at or above snd_una) is declared lost once `reorder_threshold` packets above it
are SACKed (RFC 6675's IsLost, counting packets: TCP's dupthresh 3 by default; 0: only the
timeout), and sent again, holes in order, each once until a timeout starts over (which
declares every packet not SACKed lost).  No reorder timer (RACK) is modelled: a hole with
too few packets above it waits for the timeout.  What the scheme sees: each ACK as with
ordered delivery, but an ACK that SACKs counts its packet as delivered: `acked` is the
bytes the ACK reports delivered for the first time (the cumulative advance, less what was
SACKed before, plus the packet it SACKs: each byte once), `packets` the data packets it
reports received, in order or SACKed (each once: the receiver ACKs an out-of-order packet
at once, nic_recv.pyx), with their ECN marks, and the ACK's RTT and INT; the window counts
SACKed bytes as arrived, not in flight (RFC 6675's pipe), so that reordering does not
close it; each hole the threshold declares lost is an on_nack (a NACK's signal with
ordered delivery), a timeout an on_timeout.  The sender's handler of ACKs is chosen with
the parameters (World.on_ack: nic_on_ack or nic_on_unordered_ack, one code with the mode a
constant of each), so that ordered delivery runs the same code as before.

Trimming (trim.pxd): a NACK of a trimmed packet (PK_TRIM_NACK) makes the sender send that
packet again at once, ahead of holes and new data, each once per NACK (loss.pxd's trim_*),
and tells the scheme (on_nack); under go-back-N it rewinds as any NACK.  Each data packet's
entropy is the sender's choice (entropy.pxd): fixed, oblivious or REPS, which hears of each
ACK's echoed value and whether it came back marked.
"""
from libc.stdint cimport int64_t, int32_t, uint16_t, uint32_t, INT64_MAX
from rocesim._core.defs cimport (Sim, World, Port, Packet, Flow, Qp, Host, AckInfo, LossState, NIL, NPRIO,
                                 PK_DATA, PK_ACK, PK_TRIM_NACK, EV_RTO, ENTROPY_FIXED, ENTROPY_REPS,
                                 SCHED_BLOCKED, SCHED_READY, SCHED_PACED, SELECTIVE_REPEAT, UNORDERED)
from rocesim._core.link cimport q_pop, port_kick, port_transmit, wire_time
from rocesim._core.pool cimport pkt_alloc, pkt_hops
from rocesim._core.events cimport ev_push
from rocesim._core.flows cimport flow_activate, flow_finish
from rocesim._core.qp cimport qp_of, qp_open
from rocesim._core.active_set cimport (active_add, active_remove, active_remove_at, ready_set, ready_clear,
                                       ready_next, paced_push, paced_pop, paced_valid, paced_top)
from rocesim._core.loss cimport (bit, set_bit, bits_alloc, loss_of, in_recovery, pkt_bytes, sacked_at_least,
                                 trim_nacked, trim_next, trim_take)
from rocesim._core.entropy cimport entropy_open, entropy_next, entropy_feedback
from rocesim._core.credit cimport credit_open, credit_allows, credit_spend, credit_feedback


cdef void nic_kick(Sim* s, int32_t host) noexcept nogil:
    """Let the NIC of `host` send now if its transmitter is idle."""
    cdef World* w = s.w
    cdef int32_t port = w.hosts[host].port
    cdef Port* p = &w.ports[port]
    if p.tx_event == NIL and p.busy_until <= s.now:
        nic_port_tx(s, port)
    else:
        port_kick(s, port, s.now)


cdef inline void _cursor_past_sacked(Qp* fl, LossState* sk, int64_t payload) noexcept nogil:
    """The recovery cursor to the first packet at or above snd_una that the receiver has not
    SACKed nor NACKed as trimmed (those go again by their NACK), or to the highest SACK."""
    if sk.retx_nxt < fl.snd_una:
        sk.retx_nxt = fl.snd_una
    while sk.retx_nxt < sk.sack_high and (bit(sk.sack_bits, sk.sack_bits_len, sk.retx_nxt // payload)
                                          or bit(sk.trim_bits, sk.trim_bits_len, sk.retx_nxt // payload)):
        sk.retx_nxt += payload


cdef inline int64_t _lost_hole(Sim* s, Qp* fl, LossState* sk) noexcept nogil:
    """Unordered delivery: the first hole (a packet sent, not SACKed, at or above snd_una)
    not yet sent again, if it is lost: below a timeout's recovery point, or with at least
    reorder_threshold SACKed packets above it; else -1.  Holes are sent again in order, each
    once (the cursor retx_nxt moves past it), until a timeout starts over."""
    cdef World* w = s.w
    cdef int64_t payload = w.p.payload
    _cursor_past_sacked(fl, sk, payload)
    if sk.recovery_end != NIL and sk.retx_nxt < sk.recovery_end:
        return sk.retx_nxt
    if (w.p.reorder_threshold > 0 and sk.retx_nxt < sk.sack_high
            and sacked_at_least(sk, sk.retx_nxt // payload, (sk.sack_high + payload - 1) // payload,
                                w.p.reorder_threshold)):
        return sk.retx_nxt
    return -1


cdef inline int64_t _next_seq(Sim* s, Qp* fl, int64_t size) noexcept nogil:
    """The byte offset the flow (of `size` bytes) would send next, or -1 if it has nothing
    to send."""
    cdef int64_t payload = s.w.p.payload
    cdef LossState* sk = fl.loss
    cdef int64_t hole
    if sk != NULL and sk.trims_todo > 0:
        hole = trim_next(sk, fl.snd_una // payload)     # a trimmed packet first
        if hole >= 0:
            return hole * payload
    if sk != NULL and sk.sack_bits != NULL:
        if s.w.p.delivery == UNORDERED:
            hole = _lost_hole(s, fl, sk)
            if hole >= 0:
                return hole
        elif sk.recovery_end != NIL:
            _cursor_past_sacked(fl, sk, payload)
            if sk.retx_nxt < sk.sack_high:
                return sk.retx_nxt
        while fl.snd_nxt < size and bit(sk.sack_bits, sk.sack_bits_len, fl.snd_nxt // payload):
            fl.snd_nxt += payload
    if fl.snd_nxt < size:
        return fl.snd_nxt
    return -1


cdef inline bint _window_open(World* w, Qp* fl) noexcept nogil:
    """The flow may send new data: no window, or the bytes in flight below it (with
    unordered delivery, bytes SACKed above snd_una have arrived: not in flight; nor have
    trimmed packets NACKed and not yet sent again, as uet-htsim's processNack takes them out
    of flight, uec.cpp; counted as whole packets)."""
    cdef int64_t flight
    if fl.window == 0:
        return True
    flight = fl.snd_nxt - fl.snd_una
    if fl.loss != NULL:
        flight -= fl.loss.sacked + fl.loss.trims_todo * w.p.payload
    return flight < fl.window


cdef inline bint _trimmed_resend(World* w, Qp* fl, int64_t seq) noexcept nogil:
    """The byte at `seq` starts a trimmed packet NACKed and still to send again."""
    cdef LossState* sk = fl.loss
    return sk != NULL and sk.trims_todo > 0 and bit(sk.trim_todo, sk.trim_todo_len, seq // w.p.payload)


cdef inline bint _may_send(World* w, Qp* fl, int64_t seq) noexcept nogil:
    """Whether the byte at `seq` (from _next_seq) may go as far as the window and credit go:
    the window is checked before the packet, as the HPCC fork does, and retransmissions in
    recovery pass it; new data waits for credit when receivers grant it (credit.pxd).  A
    trimmed packet's resend waits for window and credit as new data does (uet-htsim's
    sendIfPermitted and can_send_NSCC, uec.cpp: outside loss recovery a retransmission needs
    room in the window); it goes before new data (_next_seq)."""
    cdef bint trimmed
    if seq < 0:
        return False
    trimmed = _trimmed_resend(w, fl, seq)
    return ((seq != fl.snd_nxt and not trimmed) or _window_open(w, fl)) and credit_allows(w, fl, seq, trimmed)


cdef inline int64_t _pace_rate(Sim* s, int32_t f, int64_t rate) noexcept nogil:
    """The rate the NIC paces flow f at: the scheme's rate, capped by the flow's limit (if any)."""
    cdef World* w = s.w
    cdef int64_t limit = w.flow_rate_limit[f] if w.flow_rate_limit != NULL else 0
    if limit > 0 and (rate > limit or rate <= 0):
        return limit
    return rate if rate > 0 else 1


cdef inline void _send_data(Sim* s, int32_t port, int32_t f, int64_t seq) noexcept nogil:
    cdef World* w = s.w
    cdef Flow* rec = &w.flows[f]
    cdef Qp* fl = qp_of(s, f)
    cdef int32_t i = pkt_alloc(s)
    cdef Packet* pk
    cdef int64_t payload, end, rate
    cdef bint trimmed
    if i == NIL:
        return
    pk = &s.pkts[i]
    payload = rec.size - seq
    if payload > w.p.payload:
        payload = w.p.payload
    end = seq + payload
    pk.kind = PK_DATA
    pk.flow = f
    pk.dst = rec.dst
    pk.prio = rec.prio
    pk.seq = seq
    pk.ts = s.now
    pk.size = <int32_t> payload + w.p.header + (w.p.int_header if w.p.int_enabled else 0)
    pk.ttl = w.p.ttl
    if w.p.entropy == ENTROPY_FIXED:
        # a new UDP source port every entropy_every packets (0: the QP's own)
        pk.entropy = 0 if w.p.entropy_every == 0 else <uint16_t> (1 + (seq // w.p.payload // w.p.entropy_every) % 65535)
    else:
        pk.entropy = entropy_next(s, fl)
    trimmed = fl.loss != NULL and fl.loss.trims_todo > 0 and trim_take(fl.loss, seq // w.p.payload)
    credit_spend(w, fl, pk, seq, payload, trimmed)
    if fl.snd_una >= fl.snd_max:
        fl.rto_deadline = s.now + w.p.rto    # nothing was outstanding: the timeout starts now
    if seq < fl.snd_max:             # sent again: after a NACK or a timeout, so fl.loss exists
        if fl.loss != NULL:
            fl.loss.retx_bytes += payload
        s.st.retx_bytes += payload
    if trimmed:
        pass                         # a trimmed packet again (its NACK's): the cursors stay
    elif seq == fl.snd_nxt:
        fl.snd_nxt = end
    else:
        fl.loss.retx_nxt = end       # a selective-repeat retransmission (seq came from _next_seq's
                                     #   recovery cursor: fl.loss exists)
    if end > fl.snd_max:
        fl.snd_max = end
    rate = _pace_rate(s, f, fl.rate_bps)
    fl.next_send = s.now + wire_time(s, pk.size, rate)
    fl.last_send = s.now
    fl.last_size = pk.size
    s.st.data_pkts_sent += 1
    port_transmit(s, port, i)


cdef void sched_update(Sim* s, int32_t f) noexcept nogil:
    """Re-decide whether flow f (if in its host's active set) may send now, later (paced)
    or not until something changes (active_set.pxd).  The test is the one a scan of the
    flows would make: data to send, the window open and credit held (_may_send), the pacing
    time come."""
    cdef World* w = s.w
    cdef Flow* rec = &w.flows[f]
    cdef Qp* fl
    cdef Host* h
    cdef int64_t seq
    if rec.qp == NIL or rec.slot.act_pos == NIL:
        return                          # not listed, or listed and ready: no queue pair yet
    fl = qp_of(s, f)
    h = &w.hosts[rec.src]
    seq = _next_seq(s, fl, rec.size)
    if not _may_send(w, fl, seq):
        fl.sched = SCHED_BLOCKED
        ready_clear(h, rec.slot.act_pos)
    elif fl.next_send <= s.now:
        fl.sched = SCHED_READY
        ready_set(h, rec.slot.act_pos)
    else:
        ready_clear(h, rec.slot.act_pos)
        if fl.sched != SCHED_PACED or fl.paced_at != fl.next_send:
            fl.sched = SCHED_PACED
            fl.paced_at = fl.next_send
            paced_push(s, h, rec.prio, fl.next_send, f)


cdef inline void _wake_paced(Sim* s, Host* h) noexcept nogil:
    """Paced flows whose time has come become ready (stale entries are dropped)."""
    cdef int32_t prio, f
    for prio in range(NPRIO):
        while h.n_paced[prio] > 0 and h.paced[prio][0].time <= s.now:
            f = h.paced[prio][0].flow
            if paced_valid(s, &h.paced[prio][0]):
                paced_pop(h, prio)
                qp_of(s, f).sched = SCHED_BLOCKED    # so that sched_update re-decides
                sched_update(s, f)
            else:
                paced_pop(h, prio)


cdef inline bint _try_send(Sim* s, int32_t port, Port* p, Host* h, int32_t idx) noexcept nogil:
    """Send from the ready flow at position idx unless PFC pauses its priority."""
    cdef int32_t f = h.active[idx]
    cdef Flow* rec = &s.w.flows[f]
    cdef Qp* fl
    cdef int64_t seq
    if (p.paused_mask >> rec.prio) & 1:
        return False
    fl = qp_of(s, f) if rec.qp != NIL else _open(s, f)
    if fl == NULL:
        return False                    # out of memory: the loop stops on s.error
    seq = _next_seq(s, fl, rec.size)
    if fl.next_send > s.now or not _may_send(s.w, fl, seq):
        sched_update(s, f)                 # it moved on without telling: re-decide, skip it
        return False
    _send_data(s, port, f, seq)
    if _next_seq(s, fl, rec.size) < 0:
        active_remove_at(s, h, idx)   # idx now holds a flow yet to be served
        h.rr = idx if idx < h.n_active else 0
    else:
        h.rr = idx + 1 if idx + 1 < h.n_active else 0
        sched_update(s, f)
    port_kick(s, port, p.busy_until)
    return True


cdef void nic_port_tx(Sim* s, int32_t port) noexcept nogil:
    """The transmitter of host port `port` is free: send the next packet, if any.

    Control packets first (strict priority), then one data packet of the first ready
    flow, by position in the active set, from the round-robin position on; if none is
    ready the NIC wakes at the earliest pacing time of an unpaused priority."""
    cdef World* w = s.w
    cdef Port* p = &w.ports[port]
    cdef Host* h = &w.hosts[p.node]
    cdef uint32_t ready = p.q_mask & ~p.paused_mask
    cdef int32_t prio, idx, n, start
    cdef int64_t t, earliest = INT64_MAX
    if p.down:
        return                                     # link down: a link-up fault kicks the port
    if ready:
        prio = 0
        while not ((ready >> prio) & 1):
            prio += 1
        i = q_pop(s, p, prio)
        port_transmit(s, port, i)
        port_kick(s, port, p.busy_until)
        return
    n = h.n_active
    for prio in range(1, NPRIO):                   # nothing to do if PFC paused them all
        if h.prio_active[prio] and not ((p.paused_mask >> prio) & 1):
            break
    else:
        return                                     # a RESUME will kick the port
    _wake_paced(s, h)
    start = h.rr if h.rr < n else 0
    idx = ready_next(h, start, n)
    while idx != NIL:
        if _try_send(s, port, p, h, idx):
            return
        idx = ready_next(h, idx + 1, n)
    idx = ready_next(h, 0, start)
    while idx != NIL:
        if _try_send(s, port, p, h, idx):
            return
        idx = ready_next(h, idx + 1, start)
    for prio in range(NPRIO):
        if not ((p.paused_mask >> prio) & 1):
            t = paced_top(s, h, prio)
            if t >= 0 and t < earliest:
                earliest = t
    if earliest != INT64_MAX:
        port_kick(s, port, earliest)


cdef void nic_rate_changed(Sim* s, int32_t f, int64_t old_rate) noexcept nogil:
    """The scheme changed the flow's rate: the next packet is due a packet time at the new
    rate after the last one (not at the old rate), as the HPCC fork's ChangeRate does."""
    cdef World* w = s.w
    cdef Qp* fl
    cdef int64_t rate
    if w.flows[f].qp == NIL:
        return
    fl = qp_of(s, f)
    rate = _pace_rate(s, f, fl.rate_bps)
    if rate == _pace_rate(s, f, old_rate) or fl.last_size == 0:
        return
    fl.next_send = fl.last_send + wire_time(s, fl.last_size, rate)
    sched_update(s, f)
    if w.flows[f].slot.act_pos != NIL:
        port_kick(s, w.hosts[w.flows[f].src].port, fl.next_send if fl.next_send > s.now else s.now)


cdef void nic_start_flow(Sim* s, int32_t f) noexcept nogil:
    """Flow f is released now: list it, ready, in its host's round-robin (its queue pair
    opens when the NIC first serves it, _open) and arm its timeout."""
    cdef World* w = s.w
    cdef Flow* rec = &w.flows[f]
    flow_activate(s, f)
    rec.slot.act_pos = NIL
    active_add(s, f)
    if rec.slot.act_pos != NIL:
        ready_set(&w.hosts[rec.src], rec.slot.act_pos)
    if _rto_on(s, rec):
        ev_push(s, s.now + w.p.rto, EV_RTO, f, 0)
    nic_kick(s, rec.src)


cdef inline bint _rto_on(Sim* s, Flow* rec) noexcept nogil:
    cdef World* w = s.w
    return w.p.rto > 0 and (w.p.rto_mask >> rec.prio) & 1


cdef Qp* _open(Sim* s, int32_t f) noexcept nogil:
    """The NIC serves released flow f for the first time: open its queue pair, as it would
    have been at the release (the scheme's on_start runs now), ready to send."""
    cdef World* w = s.w
    cdef Flow* rec = &w.flows[f]
    cdef Qp* fl = qp_open(s, f)
    if fl == NULL:
        return NULL
    fl.line_rate = w.ports[w.hosts[rec.src].port].rate_bps
    fl.next_send = rec.released
    fl.last_cnp = NIL
    fl.rate_bps = fl.line_rate
    fl.sched = SCHED_READY
    fl.rto_deadline = s.now + w.p.rto
    fl.rto_armed = _rto_on(s, rec)           # its EV_RTO, armed at the release, is pending
    if w.p.rccc:
        credit_open(s, f, fl)
    entropy_open(s, f, fl)
    w.cc.on_start(s, f)
    return fl


cdef inline void _complete(Sim* s, int32_t f) noexcept nogil:
    active_remove(s, f)
    flow_finish(s, f)


cdef inline int64_t _on_sack(Sim* s, int32_t f, Qp* fl, int64_t una, int64_t sack) noexcept nogil:
    """Unordered delivery: an ACK moved snd_una from `una` and SACKs the packet at `sack`
    (when at or above the cumulative point): the scoreboard takes it, and the bytes SACKed
    above snd_una (not in flight: the window's count) lose those the cumulative point passed.
    Returns what the scheme's `acked` gets besides the cumulative advance: the bytes newly
    SACKed less those SACKed before that the cumulative point passed (each byte counts once,
    when first reported).  A newly SACKed packet may make a hole lost: the flow is listed
    again if it has something to send.  Out of memory: s.error set."""
    cdef World* w = s.w
    cdef int64_t payload = w.p.payload, size = w.flows[f].size
    cdef int64_t k, n, credit = 0
    cdef LossState* sk = fl.loss
    if sk != NULL and sk.sacked > 0:
        k = una // payload                      # SACKed packets the cumulative point passed
        while k * payload < fl.snd_una and sk.sacked > 0:
            if bit(sk.sack_bits, sk.sack_bits_len, k):
                n = pkt_bytes(size, payload, k)
                sk.sacked -= n
                credit -= n
            k += 1
    if sack < fl.snd_una or sack >= size:
        return credit                           # nothing beyond the cumulative point
    sk = loss_of(s, fl)
    if sk == NULL or not bits_alloc(s, &sk.sack_bits, &sk.sack_bits_len, size):
        return credit
    k = sack // payload
    if bit(sk.sack_bits, sk.sack_bits_len, k):
        return credit                           # SACKed before (a duplicate's ACK)
    set_bit(s, &sk.sack_bits, &sk.sack_bits_len, size, k)
    n = pkt_bytes(size, payload, k)
    sk.sacked += n
    if sack + n > sk.sack_high:
        sk.sack_high = sack + n
    if w.flows[f].slot.act_pos == NIL and _next_seq(s, fl, size) >= 0:
        active_add(s, f)                        # a hole is lost: it has something to send again
    return credit + n


cdef inline bint _loss_declared(Sim* s, Qp* fl) noexcept nogil:
    """Unordered delivery: the reorder threshold has just declared a hole lost that the
    scheme was not told of (each such hole once: LossState.loss_told)."""
    cdef LossState* sk = fl.loss
    cdef int64_t hole
    if sk == NULL or sk.sack_bits == NULL:
        return False
    hole = _lost_hole(s, fl, sk)
    if hole < sk.loss_told:                     # none (-1), or told already
        return False
    sk.loss_told = hole + s.w.p.payload
    return True


cdef void nic_on_ack(Sim* s, int32_t i) noexcept nogil:
    """ACK or NACK packet i reached the sender of its flow (ordered delivery)."""
    _take_ack(s, i, False)


cdef void nic_on_unordered_ack(Sim* s, int32_t i) noexcept nogil:
    """ACK packet i reached the sender of its flow (unordered delivery: with its SACK)."""
    _take_ack(s, i, True)


cdef inline void _take_ack(Sim* s, int32_t i, bint sacks) noexcept nogil:
    """ACK or NACK packet i reached the sender of its flow: the cumulative point moves and
    the scheme's on_ack runs, or a NACK rewinds as loss_recovery says.  With unordered
    delivery (`sacks`, a constant of each caller) the SACK goes into the scoreboard, the
    scheme's `acked` counts the bytes the ACK reports delivered for the first time (the
    cumulative advance, less what was SACKed before, plus the packet it SACKs), and a hole
    the threshold has just declared lost is an on_nack."""
    cdef World* w = s.w
    cdef Packet* pk = &s.pkts[i]
    cdef int32_t f = pk.flow
    cdef Flow* rec = &w.flows[f]
    cdef Qp* fl
    cdef AckInfo a
    cdef int64_t k, rate, sack, una
    cdef LossState* sk
    if rec.qp == NIL:
        return                          # done (or a stray packet of a flow not yet served)
    fl = qp_of(s, f)
    credit_feedback(fl)
    a.acked = 0
    una = fl.snd_una
    if pk.seq > fl.snd_una:
        a.acked = pk.seq - fl.snd_una
        fl.snd_una = pk.seq
        fl.rto_deadline = s.now + w.p.rto
        if fl.snd_nxt < fl.snd_una:
            fl.snd_nxt = fl.snd_una
        if in_recovery(fl) and fl.snd_una >= fl.loss.recovery_end:
            fl.loss.recovery_end = NIL
    if sacks:                                   # (a trimmed packet's NACK SACKs nothing)
        a.acked += _on_sack(s, f, fl, una, s.pkt_sack[i] if pk.kind != PK_TRIM_NACK else -1)
        if s.error:
            return                              # out of memory: the loop stops on s.error
    if w.p.entropy == ENTROPY_REPS:
        entropy_feedback(s, fl, pk.entropy, pk.kind != PK_TRIM_NACK and pk.ecn == 0)
    if pk.kind == PK_ACK:
        a.seq = pk.seq
        a.rtt = s.now - pk.ts
        a.ecn = pk.ecn > 0
        a.marked = pk.ecn
        s.st.ecn_echoes += a.ecn
        a.packets = pk.acked_pkts
        a.nhops = pk.nhops
        a.hops = pkt_hops(s, i) if w.p.int_enabled else NULL
        rate = fl.rate_bps
        w.cc.on_ack(s, f, &a)
        nic_rate_changed(s, f, rate)
        if sacks and _loss_declared(s, fl):
            rate = fl.rate_bps
            w.cc.on_nack(s, f)                  # the scheme hears of a declared loss as of a NACK
            nic_rate_changed(s, f, rate)
    else:
        sk = loss_of(s, fl)
        if sk == NULL:
            return                              # out of memory: the loop stops on s.error
        if pk.kind == PK_TRIM_NACK and s.w.p.sack_carried:
            if s.pkt_sack[i] >= fl.snd_una:     # (not: it arrived since, by another copy)
                trim_nacked(s, sk, rec.size, s.pkt_sack[i] // w.p.payload)
        elif w.p.loss_recovery == SELECTIVE_REPEAT:
            sack = s.pkt_sack[i]
            k = sack // w.p.payload
            set_bit(s, &sk.sack_bits, &sk.sack_bits_len, rec.size, k)
            if sack + w.p.payload > sk.sack_high:
                sk.sack_high = min(sack + w.p.payload, rec.size)
            if sk.recovery_end == NIL:
                sk.recovery_end = fl.snd_max
                sk.retx_nxt = fl.snd_una
        elif fl.snd_nxt > pk.seq:
            fl.snd_nxt = pk.seq                 # go-back-N
        rate = fl.rate_bps
        w.cc.on_nack(s, f)
        nic_rate_changed(s, f, rate)
        active_add(s, f)
    if fl.snd_una >= rec.size:
        _complete(s, f)
    elif rec.slot.act_pos != NIL:
        sched_update(s, f)
        nic_kick(s, rec.src)


cdef void nic_on_cnp(Sim* s, int32_t i) noexcept nogil:
    """CNP packet i reached the sender of its flow."""
    cdef World* w = s.w
    cdef int32_t f = s.pkts[i].flow
    cdef int64_t rate
    if w.flows[f].qp != NIL:
        s.st.cnps_received += 1
        rate = qp_of(s, f).rate_bps
        w.cc.on_cnp(s, f)
        nic_rate_changed(s, f, rate)
        sched_update(s, f)
