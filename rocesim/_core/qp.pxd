# cython: language_level=3
"""The queue-pair pool: the state of active data flows, taken when the NIC first serves a
flow, returned when it is done.

A flow's `Flow` record (64 B) lives as long as the simulation; its `Qp` (sequence numbers,
rates, timers, loss recovery) and the scheme's per-flow state (CCOps.flow_state_size
bytes right after it) exist only from the NIC's first packet of the flow to the ACK of
its last byte (and, when senders spray, its entropy state after that: entropy.pxd).  A released flow waits in its host's round-robin without one (it may
always send its first packet), so the pool follows the flows in flight: an all-to-all
that releases a million flows at once holds only as many queue pairs as have packets
out.  Slots live in chunks of QP_CHUNK that never move (a `Qp*` stays valid while its
flow is active); free ones are chained through `Qp.next_free`.

Receive records (issue 20: a run in parts, where a receiver may not read its sender's
memory).  The receiver's state of a flow (rcv_nxt, ACK coalescing, CNP pacing, the NACK
pacing and SACK bits of its LossState) lives in the sender's queue pair when `flow_rx` is
NULL (one part: both ends in one record, as always).  Otherwise the receiver takes a slot
of its own part's pool when the flow's first data arrive (`rx_open`, `is_rx` set) and
gives it back when the last byte is in (`rx_close`).  Either way the receiver's state
ends with the flow's last byte (`rx_of` is NULL once `rx_finish` is set): what arrives
later is a duplicate of a finished flow, ACKed with its size (nic_recv.pyx).
"""
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memset
from rocesim._core.defs cimport Sim, World, Qp, LossRec, LossState, NIL, ERR_NOMEM
from rocesim._core.loss cimport loss_free
from rocesim._core.pool cimport pkt_free
from rocesim._core.growth cimport room_for_one

cdef enum:
    QP_CHUNK_SHIFT = 10
    QP_CHUNK = 1024        # slots per chunk


cdef inline Qp* qp_at(Sim* s, int32_t q) noexcept nogil:
    return <Qp*> (s.qp_chunks[q >> QP_CHUNK_SHIFT] + (q & (QP_CHUNK - 1)) * s.qp_stride)


cdef inline Qp* qp_of(Sim* s, int32_t f) noexcept nogil:
    """The queue pair of flow f (only valid while Flow.qp != NIL)."""
    return qp_at(s, s.w.flows[f].qp)


cdef inline void* cc_flow_state(Sim* s, int32_t f) noexcept nogil:
    """The scheme's per-flow state of flow f (CCOps.flow_state_size bytes), while it has a
    queue pair: the scheme's callbacks run only then."""
    return <void*> ((<char*> qp_of(s, f)) + sizeof(Qp))


cdef inline int64_t qp_stride_for(int32_t flow_state_size, int32_t entropy_state_size) noexcept nogil:
    """Bytes per pool slot: a Qp, the scheme's state and the sender's entropy state (none
    with fixed entropy), each rounded up to 8."""
    return (<int64_t> sizeof(Qp) + (flow_state_size + 7) // 8 * 8 + entropy_state_size + 7) // 8 * 8


cdef inline void* qp_entropy_state(Sim* s, Qp* qp) noexcept nogil:
    """The sender's entropy state of queue pair `qp` (World.entropy_state_size bytes after
    the scheme's state; entropy.pxd)."""
    return <void*> ((<char*> qp) + sizeof(Qp) + (s.w.cc.flow_state_size + 7) // 8 * 8)


cdef inline int _qp_grow(Sim* s) noexcept nogil:
    """One more chunk of free slots; -1 if out of memory."""
    cdef char** chunks = <char**> realloc(s.qp_chunks, (s.n_qp_chunks + 1) * sizeof(char*))
    cdef int32_t base = s.n_qp_chunks * QP_CHUNK, q
    cdef Qp* qp
    if chunks == NULL:
        return -1
    if s.n_qp_chunks == 0:     # the slot size, from the scheme installed (before the first flow)
        s.qp_stride = qp_stride_for(s.w.cc.flow_state_size, s.w.entropy_state_size)
    s.qp_chunks = chunks
    chunks[s.n_qp_chunks] = <char*> malloc(QP_CHUNK * s.qp_stride)
    if chunks[s.n_qp_chunks] == NULL:
        return -1
    s.n_qp_chunks += 1
    s.qp_cap = base + QP_CHUNK
    for q in range(base, base + QP_CHUNK):
        qp = qp_at(s, q)
        qp.flow = NIL
        qp.loss = NULL
        qp.next_free = q + 1 if q + 1 < base + QP_CHUNK else s.qp_free
    s.qp_free = base
    return 0


cdef inline int32_t _slot_take(Sim* s, int32_t f) noexcept nogil:
    """A zeroed slot (and zeroed scheme state) of the pool for flow f; NIL and s.error set
    when out of memory."""
    cdef int32_t q
    cdef Qp* qp
    if s.qp_free == NIL and _qp_grow(s) < 0:
        s.error = ERR_NOMEM
        return NIL
    q = s.qp_free
    qp = qp_at(s, q)
    s.qp_free = qp.next_free
    memset(qp, 0, s.qp_stride)
    qp.flow = f
    qp.next_free = NIL
    qp.ack_held = NIL
    qp.ack_timer = NIL
    return q


cdef inline void _slot_give(Sim* s, int32_t q) noexcept nogil:
    """Slot q back to the pool, with what it holds: the packet kept for an ACK (the last
    byte's ACK releases it: left only by a cut run) and its loss state."""
    cdef Qp* qp = qp_at(s, q)
    if qp.ack_held != NIL:
        pkt_free(s, qp.ack_held)
        qp.ack_held = NIL
    loss_free(qp)
    qp.flow = NIL
    qp.next_free = s.qp_free
    s.qp_free = q


cdef inline Qp* qp_open(Sim* s, int32_t f) noexcept nogil:
    """Give flow f a zeroed queue pair (and zeroed scheme state); NULL and s.error set when
    out of memory."""
    cdef int32_t q = _slot_take(s, f)
    if q == NIL:
        return NULL
    s.w.flows[f].qp = q
    s.qp_used += 1
    if s.qp_used > s.qp_peak:
        s.qp_peak = s.qp_used
    return qp_at(s, q)


cdef inline LossRec* loss_log(Sim* s, int32_t f) noexcept nogil:
    """A zeroed record of flow f's loss counts, to keep them past its queue pair or receive
    record (few flows have any; the readback sums a flow's records); NULL and s.error set
    when out of memory."""
    cdef LossRec* r
    if room_for_one(<void**> &s.losses, s.n_losses, &s.cap_losses, sizeof(LossRec), 16) < 0:
        s.error = ERR_NOMEM
        return NULL
    r = &s.losses[s.n_losses]
    memset(r, 0, sizeof(LossRec))
    r.flow = f
    s.n_losses += 1
    return r


cdef inline void _log_losses(Sim* s, int32_t f, LossState* lo) noexcept nogil:
    """Keep the counts of LossState `lo` (flow f's) past it, and zero them."""
    cdef LossRec* r
    if not (lo.retx_bytes or lo.n_timeouts or lo.reordered or lo.spurious_bytes or lo.trimmed):
        return
    r = loss_log(s, f)
    if r == NULL:
        return
    r.n_timeouts = lo.n_timeouts
    r.retx_bytes = lo.retx_bytes
    r.reordered = lo.reordered
    r.spurious_bytes = lo.spurious_bytes
    r.trimmed = lo.trimmed
    lo.n_timeouts = 0
    lo.retx_bytes = lo.reordered = lo.spurious_bytes = lo.trimmed = 0


cdef inline void _log_rx_losses(Sim* s, int32_t f, LossState* lo) noexcept nogil:
    """Keep the receiver's counts of LossState `lo` (flow f's) past it, and zero them."""
    cdef LossRec* r = loss_log(s, f)
    if r == NULL:
        return
    r.reordered = lo.reordered
    r.spurious_bytes = lo.spurious_bytes
    r.trimmed = lo.trimmed
    lo.reordered = lo.spurious_bytes = lo.trimmed = 0


cdef inline void qp_close(Sim* s, int32_t f) noexcept nogil:
    """Return flow f's queue pair, if it has one, to the pool (its loss counts are kept)."""
    cdef World* w = s.w
    cdef int32_t q = w.flows[f].qp
    cdef Qp* qp
    if q == NIL:
        return
    qp = qp_at(s, q)
    if qp.loss != NULL:
        _log_losses(s, f, qp.loss)
    _slot_give(s, q)
    s.qp_used -= 1
    w.flows[f].qp = NIL


cdef inline Qp* rx_of(Sim* s, int32_t f) noexcept nogil:
    """Flow f's receive state while its receiver waits for bytes (NULL before its first
    data with receive records, and once the last byte is in): the receiver part's own
    record (`flow_rx`), or with one record per flow the sender's queue pair."""
    cdef World* w = s.w
    cdef int32_t q
    if w.flows[f].rx_finish != NIL:
        return NULL
    q = w.flows[f].qp if w.flow_rx == NULL else w.flow_rx[f]
    return qp_at(s, q) if q != NIL else NULL


cdef inline Qp* rx_open(Sim* s, int32_t f) noexcept nogil:
    """Flow f's receive state on arrival of its data before the last byte: rx_of, or with
    receive records a new one (its first data); NULL and s.error set when out of memory."""
    cdef World* w = s.w
    cdef Qp* rx = rx_of(s, f)
    cdef int32_t q
    if rx != NULL or w.flow_rx == NULL:
        return rx
    q = _slot_take(s, f)
    if q == NIL:
        return NULL
    rx = qp_at(s, q)
    rx.is_rx = 1
    rx.last_cnp = NIL
    w.flow_rx[f] = q
    s.rx_used += 1
    return rx


cdef inline void rx_close(Sim* s, int32_t f) noexcept nogil:
    """Flow f's last byte is in: the receiver's loss counts are kept (in its part), and its
    receive record, if it has one of its own, goes back to the pool (with one record per
    flow the sender closes it, qp_close)."""
    cdef World* w = s.w
    cdef int32_t q = w.flows[f].qp if w.flow_rx == NULL else w.flow_rx[f]
    cdef Qp* rx
    if q == NIL:
        return
    rx = qp_at(s, q)
    if rx.loss != NULL and (rx.loss.reordered or rx.loss.spurious_bytes or rx.loss.trimmed):
        _log_rx_losses(s, f, rx.loss)
    if w.flow_rx == NULL:
        return
    _slot_give(s, q)
    w.flow_rx[f] = NIL
    s.rx_used -= 1


cdef inline void qp_pool_release(Sim* s) noexcept nogil:
    """Free every chunk of an idle pool (no queue pair in use): a run that has ended gives
    back what its busiest moment took.  The pool grows again if the run goes on."""
    cdef int32_t i
    if s.qp_used != 0 or s.rx_used != 0:
        return
    for i in range(s.n_qp_chunks):
        free(s.qp_chunks[i])
    free(s.qp_chunks)
    s.qp_chunks = NULL
    s.n_qp_chunks = 0
    s.qp_cap = 0
    s.qp_free = NIL
