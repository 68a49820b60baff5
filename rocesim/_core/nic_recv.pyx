# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The NIC's receiver: in-order delivery, ACKs, NACKs and CNPs; the dispatch of arrivals.

In-order data advances rcv_nxt and is ACKed every `ack_every` packets (and always at
the last byte).  Go-back-N (default): out-of-order data is discarded and answered by a
NACK carrying rcv_nxt, at most once per `nack_interval` for the same rcv_nxt (the HPCC
fork's rule, 500 us).  Selective repeat (IRN-style, for lossy RoCE): the receiver keeps
out-of-order packets and NACKs each one with its sequence (a SACK).  Duplicates are
ACKed (so a lost final ACK is recovered by the timeout).  ECN-marked data makes the
receiver send a CNP, at most once per `cnp_interval` per flow, when the scheme asks for
CNPs (DCQCN).  Data of a flow whose sender is already done (a late duplicate: the queue
pair is gone, and everything was received) is answered by an ACK of the whole flow.
"""
from libc.stdint cimport int64_t, int32_t, uint8_t
from libc.string cimport memcpy
from rocesim._core.defs cimport (Sim, Packet, Flow, Qp, LossState, IntHop, NIL, PK_DATA, PK_ACK, PK_NACK, PK_CNP)
from rocesim._core.link cimport q_push
from rocesim._core.pool cimport pkt_alloc, pkt_free, pkt_hops, pkt_payload
from rocesim._core.flows cimport flow_delivered
from rocesim._core.qp cimport qp_of
from rocesim._core.loss cimport bit, set_bit, loss_of
from rocesim._core.nic_send cimport nic_kick, nic_on_ack, nic_on_cnp


cdef inline void _send_ctrl(Sim* s, int32_t data, int32_t kind, int32_t covered, int32_t marked) noexcept:
    """Answer data packet `data` with an ACK, NACK or CNP from its receiver.  An ACK echoes
    the number of CE-marked packets among the `covered` ones it acknowledges, so that a
    scheme counting marks (DCTCP) sees every mark when ACKs are coalesced."""
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
    pk.dst = fl.src
    pk.prio = <uint8_t> (s.p.ack_prio if s.p.ack_prio >= 0 else fl.prio)
    pk.ttl = s.p.ttl
    pk.seq = qp_of(s, d.flow).rcv_nxt if fl.qp != NIL else fl.size
    if s.p.selective_repeat:
        s.pkt_sack[i] = d.seq            # the SACK of a NACK (nic_send reads it)
    pk.ts = d.ts
    pk.ecn = <uint8_t> marked
    pk.acked_pkts = <uint8_t> covered
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
            memcpy(pkt_hops(s, i), pkt_hops(s, data), d.nhops * sizeof(IntHop))
    port = s.hosts[fl.dst].port
    q_push(s, &s.ports[port], pk.prio, i)
    nic_kick(s, fl.dst)


cdef inline void _ack_unacked(Sim* s, int32_t i, Qp* fl) noexcept:
    """ACK the in-order packets received since the last ACK (packet i the newest)."""
    cdef int32_t covered = fl.unacked, marked = fl.unacked_marked
    fl.unacked = 0
    fl.unacked_marked = 0
    _send_ctrl(s, i, PK_ACK, covered, marked)


cdef inline void _on_data(Sim* s, int32_t i) noexcept:
    cdef Packet* pk = &s.pkts[i]
    cdef int32_t f = pk.flow
    cdef Flow* rec = &s.flows[f]
    cdef Qp* fl
    cdef int64_t mtu = s.p.mtu
    cdef int64_t size = rec.size
    cdef int64_t before
    cdef LossState* sk
    if rec.qp == NIL:
        _send_ctrl(s, i, PK_ACK, 1, pk.ecn)     # a late duplicate of a finished flow
        return
    fl = qp_of(s, f)
    if pk.ecn and s.cc.needs_cnp and (fl.last_cnp == NIL or s.now - fl.last_cnp >= s.p.cnp_interval):
        fl.last_cnp = s.now
        _send_ctrl(s, i, PK_CNP, 1, pk.ecn)
        pk = &s.pkts[i]
    if pk.seq == fl.rcv_nxt:
        before = fl.rcv_nxt
        fl.rcv_nxt += pkt_payload(s, pk)
        sk = fl.loss
        if sk != NULL:
            while fl.rcv_nxt < size and bit(sk.rx_bits, sk.rx_bits_len, fl.rcv_nxt // mtu):
                fl.rcv_nxt += mtu
        if fl.rcv_nxt > size:
            fl.rcv_nxt = size
        s.st.data_bytes_delivered += fl.rcv_nxt - before
        fl.unacked += 1
        fl.unacked_marked += pk.ecn
        if fl.rcv_nxt >= size:
            _ack_unacked(s, i, fl)
            if rec.rx_finish == NIL:
                rec.rx_finish = s.now
                flow_delivered(s, f)
        elif fl.unacked >= s.p.ack_every:
            _ack_unacked(s, i, fl)
    elif pk.seq > fl.rcv_nxt:
        sk = loss_of(s, fl)
        if sk == NULL:
            return                              # out of memory: the loop stops on s.error
        if s.p.selective_repeat:
            set_bit(s, &sk.rx_bits, &sk.rx_bits_len, size, pk.seq // mtu)
            _send_ctrl(s, i, PK_NACK, 1, pk.ecn)
        elif sk.last_nack_seq != fl.rcv_nxt or s.now - sk.last_nack >= s.p.nack_interval:
            sk.last_nack_seq = fl.rcv_nxt
            sk.last_nack = s.now
            _send_ctrl(s, i, PK_NACK, 1, pk.ecn)
    else:
        _send_ctrl(s, i, PK_ACK, 1, pk.ecn)     # duplicate: re-ACK what we have


cdef void nic_receive(Sim* s, int32_t host, int32_t i) noexcept:
    """Packet i has fully arrived at the NIC of `host` (PAUSE frames excepted)."""
    cdef int32_t kind = s.pkts[i].kind
    if kind == PK_DATA:
        _on_data(s, i)
    elif kind == PK_CNP:
        nic_on_cnp(s, i)
    else:
        nic_on_ack(s, i)
    pkt_free(s, i)
