# cython: language_level=3
"""Selective-repeat bitmaps: one bit per packet of a flow, allocated on the first loss.

The receiver marks packets it holds beyond rcv_nxt (`Flow.rx_bits`); the sender marks
packets the receiver reported out of order (`Flow.sack_bits`).  Flows that never lose
a packet never allocate one.
"""
from libc.stdint cimport int64_t, int32_t, uint8_t
from libc.stdlib cimport calloc
from rocesim._core.defs cimport Sim, Flow, ERR_NOMEM


cdef inline bint bit(uint8_t* bits, int64_t len, int64_t k) noexcept:
    return bits != NULL and k < len * 8 and (bits[k >> 3] >> (k & 7)) & 1


cdef inline bint bits_alloc(Sim* s, uint8_t** bits, int64_t* len, Flow* fl) noexcept:
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


cdef inline void set_bit(Sim* s, uint8_t** bits, int64_t* len, Flow* fl, int64_t k) noexcept:
    if bits_alloc(s, bits, len, fl) and k < len[0] * 8:
        bits[0][k >> 3] |= <uint8_t> (1 << (k & 7))
