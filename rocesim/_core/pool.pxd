# cython: language_level=3
"""The packet pool: `Packet` structs in one growable C array with a free list.

Packets are addressed by index (never by pointer: the array may move when it
grows), and freed slots are chained through `Packet.next`; slots from `pool_fresh` on
were never used.  The pool only grows as
far as the network's buffers and wires can hold packets at once.
"""
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcpy
from posix.stdlib cimport posix_memalign
from posix.mman cimport madvise, MADV_HUGEPAGE
from rocesim._core.defs cimport Sim, Packet, IntHop, NIL, ERR_NOMEM, MAX_INT_HOPS


cdef inline Packet* pool_array(Sim* s, int32_t cap) noexcept nogil:
    """A 64-byte aligned array of `cap` packets for `s`'s pool (NULL if out of memory).

    Large pools are 2 MB aligned and asked to be backed by huge pages: under heavy PFC
    the switches hold hundreds of thousands of packets, and with 4 KB pages nearly every
    packet touched would also miss the TLB.  Large is 4 MB, or 32 MB for a part of a run
    in parts: a huge page is resident whole, and the many small pools of parts (a k=16
    fat tree at `pods`: 32 pools of 4 MB, each 3 MB in use) would hold a third more memory
    than one pool.
    """
    cdef void* mem = NULL
    cdef size_t nbytes = <size_t> cap * sizeof(Packet)
    cdef size_t large = 4194304 if s.node_part == NULL else 33554432
    cdef size_t align = 2097152 if nbytes >= large else 64
    if posix_memalign(&mem, align, nbytes) != 0:
        return NULL
    if align > 64:
        madvise(mem, nbytes, MADV_HUGEPAGE)     # advice only: no error if refused
    return <Packet*> mem


cdef inline IntHop* pkt_hops(Sim* s, int32_t i) noexcept nogil:
    """The INT records of packet i (only when INT is on: Sim.int_hops is NULL otherwise)."""
    return &s.int_hops[<int64_t> i * MAX_INT_HOPS]


cdef inline int32_t pkt_payload(Sim* s, Packet* pk) noexcept nogil:
    """Payload bytes of a data packet: its wire size less the headers (nic_send sets it)."""
    return pk.size - s.p.data_hdr - (s.p.int_bytes if s.p.int_enabled else 0)


cdef inline int pool_side_arrays(Sim* s, int32_t cap) noexcept nogil:
    """Grow the arrays kept beside the pool to `cap` packets; -1 if out of memory."""
    cdef IntHop* hops
    cdef int64_t* sack
    if s.p.selective_repeat:
        sack = <int64_t*> realloc(s.pkt_sack, <size_t> cap * sizeof(int64_t))
        if sack == NULL:
            return -1
        s.pkt_sack = sack
    if s.p.int_enabled:
        hops = <IntHop*> realloc(s.int_hops, <size_t> cap * MAX_INT_HOPS * sizeof(IntHop))
        if hops == NULL:
            return -1
        s.int_hops = hops
    return 0


cdef inline int32_t pkt_alloc(Sim* s) noexcept nogil:
    """Index of a fresh packet (fields not cleared except `next`, `nhops`, `ecn`), or NIL.
    A freed packet first (the last freed), else the pool's first never-used slot: the
    pool's pages are touched only as far as packets were ever in use at once, not to its
    doubled capacity (a run in parts has a pool per part)."""
    cdef int32_t i
    cdef Packet* grown
    if s.pool_free != NIL:
        i = s.pool_free
        s.pool_free = s.pkts[i].next
    else:
        if s.pool_fresh == s.pool_cap:
            grown = pool_array(s, 2 * s.pool_cap)
            if grown == NULL or pool_side_arrays(s, 2 * s.pool_cap) < 0:
                free(grown)
                s.error = ERR_NOMEM
                return NIL
            memcpy(grown, s.pkts, s.pool_cap * sizeof(Packet))
            free(s.pkts)
            s.pkts = grown
            s.pool_cap *= 2
        i = s.pool_fresh
        s.pool_fresh += 1
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


cdef inline int pool_init(Sim* s, int32_t cap) noexcept nogil:
    """A pool of `cap` free packets (any earlier one freed: no packet may be in use);
    -1 if out of memory."""
    free(s.pkts)
    s.pkts = pool_array(s, cap)
    if s.pkts == NULL or pool_side_arrays(s, cap) < 0:
        return -1
    s.pool_cap = cap
    s.pool_free = NIL
    s.pool_fresh = 0
    s.pool_used = 0
    return 0
