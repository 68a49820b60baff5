# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The NIC's receiver: in-order or unordered delivery, ACKs, NACKs and CNPs; the dispatch of arrivals.

In-order data advances rcv_nxt and is ACKed every `ack_every` packets, always at the last
byte, and, when ACKs are coalesced (ack_every > 1), at the latest `ack_timeout` after the
first packet the ACK would cover: a coalescing timer, as NICs bound interrupt and ACK
moderation by a packet count and a time, whichever comes first.  Without it a sender whose
window holds fewer than `ack_every` packets waits forever for an ACK the receiver never
sends.  (RoCE/InfiniBand responders hold no ACK the requester waits for: the requester sets
the BTH AckReq bit on the last packet of each message and every 2**log_ack_req_freq packets
(mlx5's QP context; Linux rxe every 64 packets, with a 128-packet window), and the
responder answers it at once.  The HPCC ns-3 fork ACKs every L2_ACK_INTERVAL bytes or at a
chunk's end, with no timer: its ReceiverCheckSeq stalls the same way.)  The timer is one
EV_ACK_TIMER per flow, pending only while an ACK is or was just owed, and the ACK it sends
is built from the newest packet it covers, kept (`Qp.ack_held`) until then: the same ACK,
echoed timestamp and INT records included, that the next packet would have triggered.
With ack_every = 1 nothing is ever owed and the timer never runs.

Ordered delivery (`nic.delivery: ordered`, default), go-back-N (default): out-of-order
data is discarded and answered by a NACK carrying rcv_nxt, at most once per
`nack_interval` for the same rcv_nxt (the HPCC fork's rule, 500 us), and only when data
arrives: a gap whose NACK was held back and after which nothing arrives is recovered by the
sender's timeout (armed on every priority when load balancing may reorder: nic_timeout.pyx).  Selective repeat
(IRN-style, for lossy RoCE): the receiver keeps out-of-order packets and NACKs each one
with its sequence (a SACK).  Unordered delivery (`nic.delivery: unordered`: direct data
placement, as NVIDIA's adaptive-routing NICs and UET's reliable unordered delivery): a
packet is placed on arrival and marked in the record's bitmap (one bit per packet of the
flow); what arrives beyond rcv_nxt is ACKed at once, the ACK carrying rcv_nxt and the
packet's sequence (its SACK; RFC 5681's immediate ACK of out-of-order data: the sender
learns of every packet held, each once, with no bitmap on the wire), covering the in-order
packets owed; a packet that fills a gap is ACKed at once too; nothing is NACKed.  The
sender decides what is lost (nic_send.pyx).  Duplicates are ACKed (so a lost final ACK is
recovered by the timeout).  Per flow the receiver counts packets that arrived with a gap
below them (`reordered`) and bytes that arrived again while held (`spurious_bytes`:
go-back-N holds nothing beyond rcv_nxt), kept past its record (qp.rx_close,
_late_duplicate).  ECN-marked data makes the receiver send a CNP, at most once per
`cnp_interval` per flow, when the scheme asks for CNPs (DCQCN).  Data of a
flow whose last byte is already in (a late duplicate) is answered by an ACK of the whole
flow and nothing else: the receiver's state ends with the last byte (qp.rx_of), whatever
its sender is doing, so a receiver never reads its sender's state (issue 20: the two may
be in different parts of a run).

A trimmed header (a data packet a switch cut, trim.pxd) is counted (flows.csv `trimmed`)
and NACKed at once (PK_TRIM_NACK, carrying its sequence as the SACK field does: the sender
sends that packet again) with unordered delivery or selective repeat; under go-back-N the
NACK carries rcv_nxt, at once when the trimmed packet is the one expected, else paced as an
out-of-order packet's.  A header of a packet already held is ACKed (uet-htsim's receiver,
uec.cpp:2741-2793, NACKs or ACKs the same way).  ACKs and NACKs echo the entropy of the
packet they answer (REPS at the sender: entropy.pxd).
"""
from libc.stdint cimport int64_t, int32_t, uint8_t
from libc.string cimport memcpy
from rocesim._core.defs cimport (Sim, World, Packet, Flow, Qp, LossState, LossRec, IntHop, NIL, PK_DATA, PK_ACK,
                                 PK_NACK, PK_CNP, PK_PULL, PK_TRIMMED, PK_TRIM_NACK, EV_ACK_TIMER,
                                 SELECTIVE_REPEAT, UNORDERED)
from rocesim._core.link cimport q_push, wire_time
from rocesim._core.events cimport ev_push
from rocesim._core.pool cimport pkt_alloc, pkt_free, pkt_hops, pkt_payload
from rocesim._core.flows cimport flow_delivered
from rocesim._core.qp cimport rx_of, rx_open, rx_close, loss_log
from rocesim._core.loss cimport bit, set_bit, loss_of
from rocesim._core.nic_send cimport nic_kick, nic_on_cnp
from rocesim._core.rccc cimport rccc_on_data, rccc_on_trimmed, rccc_on_pull


cdef inline void _send_ctrl(Sim* s, int32_t data, int32_t kind, int32_t covered, int32_t marked) noexcept nogil:
    """Answer data packet `data` with an ACK, NACK or CNP from its receiver.  An ACK echoes
    the number of CE-marked packets among the `covered` ones it acknowledges, so that a
    scheme counting marks (DCTCP) sees every mark when ACKs are coalesced."""
    cdef World* w = s.w
    cdef int32_t i = pkt_alloc(s)       # may move the pool: take pointers after it
    cdef Packet* pk
    cdef Packet* d
    cdef Flow* fl
    cdef Qp* rx
    cdef int32_t port
    if i == NIL:
        return
    pk = &s.pkts[i]
    d = &s.pkts[data]
    fl = &w.flows[d.flow]
    pk.kind = kind
    pk.flow = d.flow
    pk.dst = fl.src
    pk.prio = <uint8_t> (0 if w.p.ack_high_priority else fl.prio)
    pk.ttl = w.p.ttl
    rx = rx_of(s, d.flow)
    pk.seq = rx.rcv_nxt if rx != NULL else fl.size
    if w.p.sack_carried:
        s.pkt_sack[i] = d.seq            # the SACK (nic_send reads it: of a NACK, or of an ACK
                                         #   when it is at or above the ACK's cumulative point)
    pk.ts = d.ts
    pk.ecn = <uint8_t> marked
    pk.acked_pkts = <uint8_t> covered
    pk.entropy = d.entropy                  # echoed (REPS); control packets are routed without it
    if kind == PK_CNP:
        pk.size = w.p.cnp_size
        s.st.cnps += 1
    else:
        pk.size = w.p.ack_size
        if kind == PK_ACK:
            s.st.acks += 1
        else:
            s.st.nacks += 1
        if w.p.int_enabled:
            pk.size = w.p.ack_int_size
            pk.nhops = d.nhops
            memcpy(pkt_hops(s, i), pkt_hops(s, data), d.nhops * sizeof(IntHop))
    port = w.hosts[fl.dst].port
    q_push(s, &w.ports[port], pk.prio, i)
    nic_kick(s, fl.dst)


cdef inline void _ack_unacked(Sim* s, int32_t i, Qp* fl) noexcept nogil:
    """ACK the in-order packets received since the last ACK (packet i the newest); the
    packet kept for the coalescing timer goes back to the pool (unless it is i)."""
    cdef int32_t covered = fl.unacked, marked = fl.unacked_marked, held = fl.ack_held
    fl.unacked = 0
    fl.unacked_marked = 0
    fl.ack_held = NIL
    _send_ctrl(s, i, PK_ACK, covered, marked)
    if held != NIL and held != i:
        pkt_free(s, held)


cdef inline int64_t _ack_timeout(Sim* s, int32_t host) noexcept nogil:
    """How long host's receiver may owe an ACK: NetParams.ack_timeout, or (auto) the time
    `ack_every` full data packets take on its link.  At line rate the ack_every-th packet
    arrives (ack_every - 1) packet times after the first, so the count always wins and the
    ACKs are those of ack_every alone; a sender that stops (its window full) gets its ACK
    no later than ack_every packets at line rate would have brought it."""
    cdef World* w = s.w
    if w.p.ack_timeout >= 0:
        return w.p.ack_timeout
    return w.p.ack_every * wire_time(s, w.p.payload + w.p.header + (w.p.int_header if w.p.int_enabled else 0),
                                     w.ports[w.hosts[host].port].rate_bps)


cdef inline bint _owe_ack(Sim* s, int32_t f, Qp* fl, int32_t i) noexcept nogil:
    """In-order packet i is not ACKed yet: keep it, the newest, for the timer's ACK (the
    one kept before goes back to the pool), and on the first packet owed start the timer
    (one EV_ACK_TIMER per flow: a pending one due no later is re-armed when it fires).
    True when i is kept."""
    cdef int64_t t = _ack_timeout(s, s.w.flows[f].dst)
    if t <= 0:
        return False                            # no timer (nic.ack_timeout: 0)
    if fl.ack_held != NIL:
        pkt_free(s, fl.ack_held)
    fl.ack_held = i
    if fl.unacked == 1:
        fl.ack_due = s.now + t
        if fl.ack_timer == NIL or fl.ack_timer > fl.ack_due:
            fl.ack_timer = fl.ack_due
            ev_push(s, fl.ack_due, EV_ACK_TIMER, f, 0)
    return True


cdef void nic_ack_timer(Sim* s, int32_t f, int64_t t) noexcept nogil:
    """Flow f's coalescing timer, an EV_ACK_TIMER due at t: ACK what is owed if it is due,
    else wait for when it is."""
    cdef Qp* fl = rx_of(s, f)
    cdef int32_t held
    if fl == NULL:
        return                                  # the last byte is in: nothing is owed
    if fl.ack_timer != t:
        return                                  # superseded by an earlier one
    fl.ack_timer = NIL
    if fl.unacked == 0 or fl.ack_held == NIL:
        return                                  # ACKed meanwhile
    if s.now < fl.ack_due:
        fl.ack_timer = fl.ack_due               # owed since later than this timer was set for
        ev_push(s, fl.ack_due, EV_ACK_TIMER, f, 0)
        return
    held = fl.ack_held
    _ack_unacked(s, held, fl)
    pkt_free(s, held)


cdef inline bint _on_data(Sim* s, int32_t i) noexcept nogil:
    """Data packet i reached its receiver.  True when the receiver keeps it (_owe_ack)."""
    cdef World* w = s.w
    cdef Packet* pk = &s.pkts[i]
    cdef int32_t f = pk.flow
    cdef Flow* rec = &w.flows[f]
    cdef Qp* fl
    cdef int64_t payload = w.p.payload
    cdef int64_t size = rec.size
    cdef int64_t before
    cdef LossState* sk
    if rec.rx_finish != NIL:
        _late_duplicate(s, f, pkt_payload(s, pk))
        _send_ctrl(s, i, PK_ACK, 1, pk.ecn)     # a late duplicate: ACK the whole flow
        return False
    fl = rx_open(s, f)
    if fl == NULL:
        return False                            # out of memory: the loop stops on s.error
    if w.p.rccc:
        rccc_on_data(s, f, fl, i)
    if pk.ecn and w.cc.needs_cnp and (fl.last_cnp == NIL or s.now - fl.last_cnp >= w.p.cnp_interval):
        fl.last_cnp = s.now
        _send_ctrl(s, i, PK_CNP, 1, pk.ecn)
        pk = &s.pkts[i]
    if pk.seq == fl.rcv_nxt:
        before = fl.rcv_nxt
        fl.rcv_nxt += pkt_payload(s, pk)
        sk = fl.loss
        if sk != NULL:
            while fl.rcv_nxt < size and bit(sk.rx_bits, sk.rx_bits_len, fl.rcv_nxt // payload):
                fl.rcv_nxt += payload
        if fl.rcv_nxt > size:
            fl.rcv_nxt = size
        s.st.data_bytes_delivered += fl.rcv_nxt - before
        fl.unacked += 1
        fl.unacked_marked += pk.ecn
        if fl.rcv_nxt >= size:
            _ack_unacked(s, i, fl)
            rec.rx_finish = s.now
            rx_close(s, f)
            flow_delivered(s, f)
        elif fl.unacked >= w.p.ack_every:
            _ack_unacked(s, i, fl)
        elif w.p.delivery == UNORDERED and fl.rcv_nxt - before > pkt_payload(s, pk):
            _ack_unacked(s, i, fl)              # it filled a gap: the sender learns at once
        else:
            return _owe_ack(s, f, fl, i)        # (never with ack_every = 1)
    elif pk.seq > fl.rcv_nxt:
        _ahead(s, i, fl, size)
    else:
        _duplicate(s, i, fl)
    return False


cdef void _ahead(Sim* s, int32_t i, Qp* fl, int64_t size) noexcept nogil:
    """Data packet i arrived beyond rcv_nxt (of a flow of `size` bytes), with a gap below it:
    counted (reordered, or spurious if held already), then NACKed (ordered delivery) or
    placed and ACKed at once with its SACK (unordered)."""
    cdef World* w = s.w
    cdef Packet* pk = &s.pkts[i]
    cdef int64_t k = pk.seq // w.p.payload
    cdef LossState* sk = loss_of(s, fl)
    if sk == NULL:
        return                                  # out of memory: the loop stops on s.error
    if bit(sk.rx_bits, sk.rx_bits_len, k):
        sk.spurious_bytes += pkt_payload(s, pk)     # held already (not go-back-N)
        s.st.spurious_bytes += pkt_payload(s, pk)
        if w.p.delivery == UNORDERED:
            _send_ctrl(s, i, PK_ACK, 1, pk.ecn)
            return
    else:
        sk.reordered += 1
        s.st.reordered += 1
    if w.p.delivery == UNORDERED:
        # placed: ACKed at once with its SACK, covering the in-order packets owed
        set_bit(s, &sk.rx_bits, &sk.rx_bits_len, size, k)
        fl.unacked += 1
        fl.unacked_marked += pk.ecn
        _ack_unacked(s, i, fl)
    elif w.p.loss_recovery == SELECTIVE_REPEAT:
        set_bit(s, &sk.rx_bits, &sk.rx_bits_len, size, k)
        _send_ctrl(s, i, PK_NACK, 1, pk.ecn)
    else:
        _go_back_n_nack(s, i, fl, sk, PK_NACK, False)


cdef inline void _go_back_n_nack(Sim* s, int32_t i, Qp* fl, LossState* sk, int32_t kind, bint now) noexcept nogil:
    """Go-back-N: NACK rcv_nxt for packet i (`kind`: PK_NACK, or PK_TRIM_NACK for a trimmed
    header), at most once per nack_interval for the same rcv_nxt unless `now`."""
    if now or sk.last_nack_seq != fl.rcv_nxt or s.now - sk.last_nack >= s.w.p.nack_interval:
        sk.last_nack_seq = fl.rcv_nxt
        sk.last_nack = s.now
        _send_ctrl(s, i, kind, 1 if kind == PK_NACK else 0, s.pkts[i].ecn)


cdef void _on_trimmed(Sim* s, int32_t i) noexcept nogil:
    """Trimmed header i (a data packet a switch cut) reached its receiver: counted, and NACKed
    (or ACKed if the packet is held already)."""
    cdef World* w = s.w
    cdef Packet* pk = &s.pkts[i]
    cdef int32_t f = pk.flow
    cdef Qp* fl
    cdef LossState* sk
    cdef LossRec* r
    if w.flows[f].rx_finish != NIL:
        r = _late_record(s, f)                  # the flow is in: ACK it whole
        if r != NULL:
            r.trimmed += 1
        _send_ctrl(s, i, PK_ACK, 0, 0)
        return
    fl = rx_open(s, f)
    sk = loss_of(s, fl) if fl != NULL else NULL
    if sk == NULL:
        return                                  # out of memory: the loop stops on s.error
    sk.trimmed += 1
    if pk.seq < fl.rcv_nxt or bit(sk.rx_bits, sk.rx_bits_len, pk.seq // w.p.payload):
        _send_ctrl(s, i, PK_ACK, 0, 0)          # held already (another copy arrived)
    elif w.p.delivery == UNORDERED or w.p.loss_recovery == SELECTIVE_REPEAT:
        if w.p.rccc:
            rccc_on_trimmed(s, f, fl, i)        # its resend will need credit: granted again
        _send_ctrl(s, i, PK_TRIM_NACK, 0, pk.ecn)
    else:
        _go_back_n_nack(s, i, fl, sk, PK_TRIM_NACK, pk.seq == fl.rcv_nxt)


cdef void _duplicate(Sim* s, int32_t i, Qp* fl) noexcept nogil:
    """Data packet i arrived below rcv_nxt, held already: counted spurious, re-ACKed."""
    cdef LossState* sk = loss_of(s, fl)
    if sk == NULL:
        return                                  # out of memory: the loop stops on s.error
    sk.spurious_bytes += pkt_payload(s, &s.pkts[i])
    s.st.spurious_bytes += pkt_payload(s, &s.pkts[i])
    _send_ctrl(s, i, PK_ACK, 1, s.pkts[i].ecn)


cdef void _late_duplicate(Sim* s, int32_t f, int64_t payload) noexcept nogil:
    """Data of flow f arrived after its last byte (the receiver has no record left): its
    bytes count as a spurious retransmission."""
    cdef LossRec* r = _late_record(s, f)
    s.st.spurious_bytes += payload
    if r != NULL:
        r.spurious_bytes += payload


cdef inline LossRec* _late_record(Sim* s, int32_t f) noexcept nogil:
    """Where the receiver counts what arrives of flow f after its last byte: a loss record of
    the receiver's part (the last one when it is f's); NULL and s.error when out of memory."""
    if s.n_losses > 0 and s.losses[s.n_losses - 1].flow == f:
        return &s.losses[s.n_losses - 1]
    return loss_log(s, f)


cdef void nic_receive(Sim* s, int32_t host, int32_t i) noexcept nogil:
    """Packet i has fully arrived at the NIC of `host` (PAUSE frames excepted)."""
    cdef int32_t kind = s.pkts[i].kind
    if kind == PK_DATA:
        if _on_data(s, i):
            return                              # kept until the ACK that covers it
    elif kind == PK_CNP:
        nic_on_cnp(s, i)
    elif kind == PK_PULL:
        rccc_on_pull(s, i)
    elif kind == PK_TRIMMED:
        _on_trimmed(s, i)
    else:
        s.w.on_ack(s, i)                        # nic_send's, as the delivery mode says
    pkt_free(s, i)
