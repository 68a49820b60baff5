# cython: language_level=3
"""The event heap: a 4-ary min-heap of `Event` structs in one growable C array.

Order is (time, seq); `seq` is a global insertion counter, so events at the same
picosecond run in the order they were scheduled and every run is bit-identical.
A 4-ary heap halves the depth of a binary one; the array is placed so that the four
children of a node (4i+1 .. 4i+4, 128 bytes) are exactly two aligned cache lines: a
sift-down step touches two lines, not three.
"""
from libc.stdint cimport int64_t, int32_t
from libc.stdlib cimport free
from libc.string cimport memcpy
from posix.stdlib cimport posix_memalign
from rocesim._core.defs cimport Sim, Event, ERR_NOMEM


cdef inline Event* heap_array(int64_t cap) noexcept nogil:
    """Room for `cap` events, element 1 on a 64-byte boundary (release with heap_free);
    NULL if out of memory."""
    cdef void* mem = NULL
    if posix_memalign(&mem, 64, <size_t> (cap + 1) * sizeof(Event)) != 0:
        return NULL
    return (<Event*> mem) + 1          # sizeof(Event) == 32: element 1 at mem + 64


cdef inline void heap_free(Event* h) noexcept nogil:
    if h != NULL:
        free(h - 1)


cdef inline bint _before(Event* a, Event* b) noexcept nogil:
    return a.time < b.time or (a.time == b.time and a.seq < b.seq)


cdef inline void heap_push(Sim* s, int64_t time, int32_t kind, int32_t target,
                           int64_t arg) noexcept nogil:
    cdef Event* h
    cdef int64_t i, parent
    cdef Event ev
    if s.heap_n == s.heap_cap:
        h = heap_array(2 * s.heap_cap)
        if h == NULL:
            s.error = ERR_NOMEM
            return
        memcpy(h, s.heap, s.heap_n * sizeof(Event))
        heap_free(s.heap)
        s.heap = h
        s.heap_cap *= 2
    ev.time = time
    ev.seq = s.seq
    ev.kind = kind
    ev.target = target
    ev.arg = arg
    s.seq += 1
    h = s.heap
    i = s.heap_n
    s.heap_n += 1
    while i > 0:
        parent = (i - 1) >> 2
        if not _before(&ev, &h[parent]):
            break
        h[i] = h[parent]
        i = parent
    h[i] = ev


cdef inline Event heap_pop(Sim* s) noexcept nogil:
    """Remove and return the earliest event (the heap must not be empty)."""
    cdef Event* h = s.heap
    cdef Event top = h[0]
    cdef Event last
    cdef int64_t n, i, c, best, end
    s.heap_n -= 1
    n = s.heap_n
    if n == 0:
        return top
    last = h[n]
    i = 0
    while True:
        c = 4 * i + 1
        if c >= n:
            break
        best = c
        end = c + 4
        if end > n:
            end = n
        c += 1
        while c < end:
            if _before(&h[c], &h[best]):
                best = c
            c += 1
        if not _before(&h[best], &last):
            break
        h[i] = h[best]
        i = best
    h[i] = last
    return top
