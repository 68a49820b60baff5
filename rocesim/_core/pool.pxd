# cython: language_level=3
"""The packet pool: `Packet` structs in one growable C array with a free list.

Packets are addressed by index (never by pointer: the array may move when it
grows), and free slots are chained through `Packet.next`.  The pool only grows as
far as the network's buffers and wires can hold packets at once.
"""
from libc.stdint cimport int32_t
from libc.stdlib cimport free
from libc.string cimport memcpy
from posix.stdlib cimport posix_memalign
from posix.mman cimport madvise, MADV_HUGEPAGE
from rocesim._core.defs cimport Sim, Packet, NIL, ERR_NOMEM


cdef inline Packet* pool_array(int32_t cap) noexcept nogil:
    """A 64-byte aligned array of `cap` packets (NULL if out of memory).

    Large pools are 2 MB aligned and asked to be backed by huge pages: under heavy PFC
    the switches hold hundreds of thousands of packets, and with 4 KB pages nearly every
    packet touched would also miss the TLB.
    """
    cdef void* mem = NULL
    cdef size_t nbytes = <size_t> cap * sizeof(Packet)
    cdef size_t align = 2097152 if nbytes >= 4194304 else 64
    if posix_memalign(&mem, align, nbytes) != 0:
        return NULL
    if align > 64:
        madvise(mem, nbytes, MADV_HUGEPAGE)     # advice only: no error if refused
    return <Packet*> mem


cdef inline int32_t pkt_alloc(Sim* s) noexcept nogil:
    """Index of a fresh packet (fields not cleared except `next`, `nhops`, `ecn`), or NIL."""
    cdef int32_t i, cap
    cdef Packet* grown
    if s.pool_free == NIL:
        cap = s.pool_cap * 2
        grown = pool_array(cap)
        if grown == NULL:
            s.error = ERR_NOMEM
            return NIL
        memcpy(grown, s.pkts, s.pool_cap * sizeof(Packet))
        free(s.pkts)
        s.pkts = grown
        for i in range(s.pool_cap, cap - 1):
            grown[i].next = i + 1
        grown[cap - 1].next = NIL
        s.pool_free = s.pool_cap
        s.pool_cap = cap
    i = s.pool_free
    s.pool_free = s.pkts[i].next
    s.pool_used += 1
    if s.pool_used > s.pool_peak:
        s.pool_peak = s.pool_used
    s.pkts[i].next = NIL
    s.pkts[i].nhops = 0
    s.pkts[i].ecn = 0
    s.pkts[i].hop = 0
    s.pkts[i].in_port = NIL
    return i


cdef inline void pkt_free(Sim* s, int32_t i) noexcept nogil:
    s.pkts[i].next = s.pool_free
    s.pool_free = i
    s.pool_used -= 1
