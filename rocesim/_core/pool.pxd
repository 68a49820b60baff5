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
from rocesim._core.defs cimport Sim, World, Packet, IntHop, NIL, ERR_NOMEM, MAX_INT_HOPS


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


cdef extern from *:
    """
    #include <string.h>
    #include <sys/mman.h>
    /* A part's pool (a run in parts) lives in its own mapping, grown in place or moved by
       the kernel (mremap): no copy, and no freed array left behind in the heap, where the
       pools of hundreds of parts doubling at once would leave holes (k=16 at `leaves`). */
    static void* rocesim_map(size_t n) {
        void* p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    static void* rocesim_remap(void* p, size_t old, size_t n) {
    #ifdef MREMAP_MAYMOVE
        void* q = mremap(p, old, n, MREMAP_MAYMOVE);
        return q == MAP_FAILED ? NULL : q;
    #else
        void* q = rocesim_map(n);
        if (q != NULL) { memcpy(q, p, old); munmap(p, old); }
        return q;
    #endif
    }
    """
    void* rocesim_map(size_t n) noexcept nogil
    void* rocesim_remap(void* p, size_t old, size_t n) noexcept nogil
    int munmap(void* p, size_t n) noexcept nogil


cdef inline Packet* _pool_grown(Sim* s) noexcept nogil:
    """The pool's array with room for twice its packets, its packets kept (the old array
    given back), or NULL if out of memory (the old array kept).  A part of a run in parts
    moves its pool into a mapping of its own at its first growth (rocesim_map)."""
    cdef World* w = s.w
    cdef size_t old = <size_t> s.pool_cap * sizeof(Packet)
    cdef Packet* grown
    if s.pool_mapped:
        return <Packet*> rocesim_remap(s.pkts, old, 2 * old)
    grown = <Packet*> rocesim_map(2 * old) if w.node_part != NULL else pool_array(2 * s.pool_cap)
    if grown != NULL:
        memcpy(grown, s.pkts, old)
        free(s.pkts)
        s.pool_mapped = w.node_part != NULL
    return grown


cdef inline void pool_release_array(Sim* s) noexcept nogil:
    """Give back the pool's array (mapped or not)."""
    if s.pool_mapped:
        munmap(s.pkts, <size_t> s.pool_cap * sizeof(Packet))
    else:
        free(s.pkts)
    s.pkts = NULL
    s.pool_mapped = False


cdef inline IntHop* pkt_hops(Sim* s, int32_t i) noexcept nogil:
    """The INT records of packet i (only when INT is on: Sim.int_hops is NULL otherwise)."""
    return &s.int_hops[<int64_t> i * MAX_INT_HOPS]


cdef inline int32_t pkt_payload(Sim* s, Packet* pk) noexcept nogil:
    """Payload bytes of a data packet: its wire size less the headers (nic_send sets it)."""
    cdef World* w = s.w
    return pk.size - w.p.header - (w.p.int_header if w.p.int_enabled else 0)


cdef inline int pool_side_arrays(Sim* s, int32_t cap) noexcept nogil:
    """Grow the arrays kept beside the pool to `cap` packets; -1 if out of memory."""
    cdef World* w = s.w
    cdef IntHop* hops
    cdef int64_t* sack
    if w.p.sack_carried:
        sack = <int64_t*> realloc(s.pkt_sack, <size_t> cap * sizeof(int64_t))
        if sack == NULL:
            return -1
        s.pkt_sack = sack
    if w.p.int_enabled:
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
            if pool_side_arrays(s, 2 * s.pool_cap) < 0:
                s.error = ERR_NOMEM
                return NIL
            grown = _pool_grown(s)
            if grown == NULL:
                s.error = ERR_NOMEM
                return NIL
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
    pool_release_array(s)
    s.pkts = pool_array(cap)
    if s.pkts == NULL or pool_side_arrays(s, cap) < 0:
        return -1
    s.pool_cap = cap
    s.pool_free = NIL
    s.pool_fresh = 0
    s.pool_used = 0
    return 0
