# cython: language_level=3
"""Selective-repeat state: one `SackState` per flow, allocated on the flow's first loss.

The receiver marks packets it holds beyond rcv_nxt (`SackState.rx_bits`); the sender
marks packets the receiver reported out of order (`SackState.sack_bits`), and keeps its
recovery cursor (`retx_nxt`) and highest SACK (`sack_high`) there.  Flows that never lose
a packet allocate nothing (`Qp.sack` stays NULL); bitmaps are allocated on first use.
"""
from libc.stdint cimport int64_t, int32_t, uint8_t
from libc.stdlib cimport calloc, free
from rocesim._core.defs cimport Sim, Qp, SackState, ERR_NOMEM


cdef inline bint bit(uint8_t* bits, int64_t len, int64_t k) noexcept:
    return bits != NULL and k < len * 8 and (bits[k >> 3] >> (k & 7)) & 1


cdef inline SackState* sack_of(Sim* s, Qp* qp) noexcept:
    """The flow's selective-repeat state, allocated zeroed if not yet done (NULL and
    s.error set when out of memory)."""
    if qp.sack == NULL:
        qp.sack = <SackState*> calloc(1, sizeof(SackState))
        if qp.sack == NULL:
            s.error = ERR_NOMEM
    return qp.sack


cdef inline void sack_free(Qp* qp) noexcept nogil:
    if qp.sack != NULL:
        free(qp.sack.rx_bits)
        free(qp.sack.sack_bits)
        free(qp.sack)
        qp.sack = NULL


cdef inline bint bits_alloc(Sim* s, uint8_t** bits, int64_t* len, int64_t size) noexcept:
    """Allocate a zeroed bitmap with one bit per packet of a flow of `size` bytes, if not yet done."""
    cdef int64_t n
    if bits[0] == NULL:
        n = ((size + s.p.mtu - 1) // s.p.mtu + 7) // 8
        bits[0] = <uint8_t*> calloc(n, 1)
        if bits[0] == NULL:
            s.error = ERR_NOMEM
            return False
        len[0] = n
    return True


cdef inline void set_bit(Sim* s, uint8_t** bits, int64_t* len, int64_t size, int64_t k) noexcept:
    if bits_alloc(s, bits, len, size) and k < len[0] * 8:
        bits[0][k >> 3] |= <uint8_t> (1 << (k & 7))
