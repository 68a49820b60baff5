# cython: language_level=3
"""Loss-recovery state: one `LossState` per flow, allocated on the flow's first loss or
reordering (a packet out of order or again at its receiver, a NACK or a SACK at its sender,
a timeout).

It holds the go-back-N receiver's NACK pacing, the sender's recovery point and its counts
of bytes sent again and timeouts, the receiver's counts of reordered packets and of bytes
that arrived again (spurious retransmissions), and for selective repeat and unordered
delivery the bitmaps: the receiver marks packets it holds beyond rcv_nxt (`rx_bits`), the
sender packets the receiver reported out of order (`sack_bits`), with its recovery cursor
(`retx_nxt`) and highest SACK (`sack_high`), and with unordered delivery the bytes SACKed
above snd_una (`sacked`: delivered, not in flight).  Packets a switch trimmed (trim.pxd) and
the receiver NACKed are sent again at once, each once per NACK (`trim_todo`), ahead of the
holes the recovery cursor finds, which passes over them (`trim_bits`) until a timeout starts
over (selective repeat and unordered delivery; go-back-N rewinds as for any NACK).  Flows that never lose or reorder a
packet allocate nothing (`Qp.loss` stays NULL); bitmaps are allocated on first use, one bit
per packet of the flow (a receiver holds at most the flow).
"""
from libc.stdint cimport int64_t, int32_t, uint8_t
from libc.stdlib cimport calloc, free
from libc.string cimport memset
from rocesim._core.defs cimport Sim, World, Qp, LossState, NIL, ERR_NOMEM


cdef inline bint bit(uint8_t* bits, int64_t len, int64_t k) noexcept nogil:
    return bits != NULL and k < len * 8 and (bits[k >> 3] >> (k & 7)) & 1


cdef inline LossState* loss_of(Sim* s, Qp* qp) noexcept nogil:
    """The flow's loss-recovery state, allocated if not yet done (NULL and s.error set
    when out of memory)."""
    cdef LossState* lo
    if qp.loss == NULL:
        lo = <LossState*> calloc(1, sizeof(LossState))
        if lo == NULL:
            s.error = ERR_NOMEM
            return NULL
        lo.recovery_end = NIL
        lo.last_nack = NIL
        lo.last_nack_seq = NIL
        qp.loss = lo
    return qp.loss


cdef inline bint in_recovery(Qp* qp) noexcept nogil:
    """The sender is recovering from a loss (selective repeat: holes below recovery_end)."""
    return qp.loss != NULL and qp.loss.recovery_end != NIL


cdef inline void loss_free(Qp* qp) noexcept nogil:
    if qp.loss != NULL:
        free(qp.loss.rx_bits)
        free(qp.loss.sack_bits)
        free(qp.loss.trim_todo)
        free(qp.loss.trim_bits)
        free(qp.loss)
        qp.loss = NULL


cdef inline bint bits_alloc(Sim* s, uint8_t** bits, int64_t* len, int64_t size) noexcept nogil:
    """Allocate a zeroed bitmap with one bit per packet of a flow of `size` bytes, if not yet done."""
    cdef World* w = s.w
    cdef int64_t n
    if bits[0] == NULL:
        n = ((size + w.p.payload - 1) // w.p.payload + 7) // 8
        bits[0] = <uint8_t*> calloc(n, 1)
        if bits[0] == NULL:
            s.error = ERR_NOMEM
            return False
        len[0] = n
    return True


cdef inline void set_bit(Sim* s, uint8_t** bits, int64_t* len, int64_t size, int64_t k) noexcept nogil:
    if bits_alloc(s, bits, len, size) and k < len[0] * 8:
        bits[0][k >> 3] |= <uint8_t> (1 << (k & 7))


cdef inline int64_t pkt_bytes(int64_t size, int64_t payload, int64_t k) noexcept nogil:
    """Payload bytes of packet k of a flow of `size` bytes (the last one may be short)."""
    cdef int64_t left = size - k * payload
    return payload if left > payload else left


cdef inline bint sacked_at_least(LossState* sk, int64_t k, int64_t hi, int32_t need) noexcept nogil:
    """At least `need` of the packets k+1 .. hi-1 are SACKed (unordered delivery's test of
    hole k: RFC 6675's IsLost, counting packets).  Stops at the `need`-th."""
    cdef int64_t n = 0
    k += 1
    while k < hi:
        if (k & 7) == 0 and (k >> 3) < sk.sack_bits_len and sk.sack_bits[k >> 3] == 0:
            k += 8                          # eight holes at once
            continue
        if bit(sk.sack_bits, sk.sack_bits_len, k):
            n += 1
            if n >= need:
                return True
        k += 1
    return False


cdef inline void trim_nacked(Sim* s, LossState* sk, int64_t size, int64_t k) noexcept nogil:
    """Packet k (of a flow of `size` bytes) was trimmed: the receiver NACKed it; it goes
    again once, before any other (trim_next), and the recovery cursor passes over it."""
    if bit(sk.trim_todo, sk.trim_todo_len, k):
        return
    set_bit(s, &sk.trim_todo, &sk.trim_todo_len, size, k)
    set_bit(s, &sk.trim_bits, &sk.trim_bits_len, size, k)
    if sk.trims_todo == 0 or k < sk.trim_lo:
        sk.trim_lo = k
    sk.trims_todo += 1


cdef inline int64_t trim_next(LossState* sk, int64_t una_k) noexcept nogil:
    """The lowest trimmed packet still to send again, or -1; those the receiver has since
    got (below packet una_k, or SACKed) are struck off on the way."""
    cdef int64_t k = sk.trim_lo, n = sk.trim_todo_len * 8
    while sk.trims_todo > 0 and k < n:
        if (k & 7) == 0 and sk.trim_todo[k >> 3] == 0:
            k += 8
            continue
        if bit(sk.trim_todo, sk.trim_todo_len, k):
            if k >= una_k and not bit(sk.sack_bits, sk.sack_bits_len, k):
                sk.trim_lo = k
                return k
            sk.trim_todo[k >> 3] &= <uint8_t> ~(1 << (k & 7))
            sk.trims_todo -= 1
        k += 1
    sk.trims_todo = 0
    return -1


cdef inline bint trim_take(LossState* sk, int64_t k) noexcept nogil:
    """Packet k goes again: if it was a trimmed one to send, it is struck off (True)."""
    if not bit(sk.trim_todo, sk.trim_todo_len, k):
        return False
    sk.trim_todo[k >> 3] &= <uint8_t> ~(1 << (k & 7))
    sk.trims_todo -= 1
    return True


cdef inline void trims_forget(LossState* sk) noexcept nogil:
    """A timeout: every packet not SACKed goes again by the recovery cursor, trimmed ones too."""
    if sk.trim_todo != NULL:
        memset(sk.trim_todo, 0, sk.trim_todo_len)
    if sk.trim_bits != NULL:
        memset(sk.trim_bits, 0, sk.trim_bits_len)
    sk.trims_todo = 0
