# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Receiver credits (RCCC, the Ultra Ethernet transport's receiver-driven congestion control,
as uet-htsim models it: htsim/sim/uec.cpp's pull pacer; credit.pxd is the sender's side).

With `nic.rccc` on, each receiving host runs one pacer for every flow towards it.  A flow is
listed with it from its first data on, while it still wants credit: its size less the bytes
it sent on the speculative credit it started with (its packets say so) less what was
granted to it (payload bytes, as the sender spends them), plus the payload of its credited
packets that reached it trimmed: their resends wait for credit as new data does
(uet-htsim's sender counts its retransmission backlog in the demand it states, uec.cpp
computePullTarget; a trimmed speculative packet was never counted as arrived, so its bytes
are in the demand already).  The pacer serves the listed
flows round-robin, one grant of at most `rccc_credit` bytes (16 KiB) per turn, sent as a PULL
(a control packet carrying the bytes granted so far), and waits the time the grant's packets
take on its link, headers included, at `rccc_pace` (99%) of its rate before the next: N senders each get 1/N of the receiver's link, and what they send on credit
arrives no faster than it can leave.  A flow leaves the list once granted all it wants.

The receiver counts speculative bytes as they arrive, so while some are still on their way
it may grant a flow a little more than it will need (never less): a small flow may then hold
unused credit, and the pacer's time for it is lost (uet-htsim's senders state their demand
in each packet instead).  Unsolicited grants to idle flows (uet-htsim's slow pulls) are not
modelled.
"""
from libc.stdint cimport int64_t, int32_t
from libc.string cimport memmove
from rocesim._core.defs cimport Sim, World, Host, Qp, Packet, Flow, NIL, ERR_NOMEM, PK_PULL, EV_PULL
from rocesim._core.link cimport q_push
from rocesim._core.events cimport ev_push
from rocesim._core.pool cimport pkt_alloc, pkt_payload
from rocesim._core.qp cimport rx_of, qp_of
from rocesim._core.growth cimport room_for_one
from rocesim._core.credit cimport credit_feedback
from rocesim._core.nic_send cimport sched_update, nic_kick


cdef inline int64_t _wanted(Sim* s, int32_t f, Qp* rx) noexcept nogil:
    """Bytes of credit flow f still wants (rx: its receive state)."""
    return s.w.flows[f].size - rx.rcv_spec - rx.rcv_granted + rx.rcv_regrant


cdef void rccc_on_data(Sim* s, int32_t f, Qp* rx, int32_t i) noexcept nogil:
    """Data packet i of flow f reached its receiver (rx: the flow's receive state): count it
    if it came on speculative credit, and list the flow with the pacer while it wants credit."""
    cdef Packet* pk = &s.pkts[i]
    if pk.spec:
        rx.rcv_spec += pkt_payload(s, pk)
    _list(s, f, rx)


cdef void rccc_on_trimmed(Sim* s, int32_t f, Qp* rx, int32_t i) noexcept nogil:
    """Trimmed header i of flow f reached its receiver, which NACKs it: a credited packet's
    payload is wanted again (its resend spends credit), and the flow is listed."""
    cdef World* w = s.w
    cdef Packet* pk = &s.pkts[i]
    cdef int64_t payload = w.flows[f].size - pk.seq
    if not pk.spec:
        rx.rcv_regrant += payload if payload < w.p.payload else w.p.payload
    _list(s, f, rx)


cdef inline void _list(Sim* s, int32_t f, Qp* rx) noexcept nogil:
    """List flow f with its receiver's pacer if it wants credit and is not listed yet."""
    cdef World* w = s.w
    cdef int32_t host = w.flows[f].dst
    cdef Host* h = &w.hosts[host]
    if rx.pull_listed or _wanted(s, f, rx) <= 0:
        return
    if room_for_one(<void**> &h.pull_flows, h.n_pull, &h.cap_pull, sizeof(int32_t), 16) < 0:
        s.error = ERR_NOMEM
        return
    h.pull_flows[h.n_pull] = f
    h.n_pull += 1
    rx.pull_listed = 1
    if not h.pull_armed:
        h.pull_armed = 1
        ev_push(s, h.pull_free if h.pull_free > s.now else s.now, EV_PULL, host, 0)


cdef inline void _send_pull(Sim* s, int32_t f, int64_t granted) noexcept nogil:
    """A PULL from flow f's receiver to its sender: `granted` bytes so far."""
    cdef World* w = s.w
    cdef Flow* rec = &w.flows[f]
    cdef int32_t i = pkt_alloc(s)
    cdef Packet* pk
    if i == NIL:
        return
    pk = &s.pkts[i]
    pk.kind = PK_PULL
    pk.flow = f
    pk.dst = rec.src
    pk.prio = <unsigned char> (0 if w.p.ack_high_priority else rec.prio)
    pk.ttl = w.p.ttl
    pk.seq = granted
    pk.ts = s.now
    pk.acked_pkts = 0
    pk.size = w.p.ack_size
    q_push(s, &w.ports[w.hosts[rec.dst].port], pk.prio, i)
    nic_kick(s, rec.dst)


cdef inline void _unlist(Host* h, int32_t at) noexcept nogil:
    memmove(&h.pull_flows[at], &h.pull_flows[at + 1], (h.n_pull - at - 1) * sizeof(int32_t))
    h.n_pull -= 1


cdef inline int64_t _grant_time(Sim* s, Host* h, int64_t grant) noexcept nogil:
    """How long the pacer waits after a grant: the wire bytes it lets in (payload and each
    packet's header) at rccc_pace of the host's link rate."""
    cdef World* w = s.w
    cdef int64_t packets = (grant + w.p.payload - 1) // w.p.payload
    cdef double wire = grant + packets * w.p.header
    return <int64_t> (wire * 8e12 / (w.p.rccc_pace * w.ports[h.port].rate_bps))


cdef void rccc_pace(Sim* s, int32_t host) noexcept nogil:
    """The pacer of `host` may grant (an EV_PULL): the next listed flow that wants credit gets
    one grant, and the pacer waits its bytes at rccc_pace of the link rate."""
    cdef World* w = s.w
    cdef Host* h = &w.hosts[host]
    cdef int32_t f
    cdef int64_t want, grant
    cdef Qp* rx
    h.pull_armed = 0
    while h.n_pull > 0:
        if h.pull_rr >= h.n_pull:
            h.pull_rr = 0
        f = h.pull_flows[h.pull_rr]
        rx = rx_of(s, f)
        want = _wanted(s, f, rx) if rx != NULL else 0
        grant = want if want < w.p.rccc_credit else w.p.rccc_credit
        if grant == want or grant <= 0:      # all it wants (or its last byte is in): it leaves
            if rx != NULL:
                rx.pull_listed = 0
            _unlist(h, h.pull_rr)
        else:
            h.pull_rr += 1
        if grant > 0:
            rx.rcv_granted += grant
            _send_pull(s, f, rx.rcv_granted)
            s.last_work = s.now
            h.pull_free = s.now + _grant_time(s, h, grant)
            if h.n_pull > 0:
                h.pull_armed = 1
                ev_push(s, h.pull_free, EV_PULL, host, 0)
            return


cdef void rccc_on_pull(Sim* s, int32_t i) noexcept nogil:
    """PULL packet i reached the sender of its flow: the credit it grants, if the flow is
    still sending."""
    cdef World* w = s.w
    cdef Packet* pk = &s.pkts[i]
    cdef int32_t f = pk.flow
    cdef Qp* fl
    if w.flows[f].qp == NIL:
        return
    fl = qp_of(s, f)
    credit_feedback(fl)
    if pk.seq > fl.credit_seen:
        fl.credit += pk.seq - fl.credit_seen
        fl.credit_seen = pk.seq
    if w.flows[f].slot.act_pos != NIL:
        sched_update(s, f)
        nic_kick(s, w.flows[f].src)
