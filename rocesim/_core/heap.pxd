# cython: language_level=3
"""The event heap: a 4-ary min-heap of `Event` structs in one growable C array.

Order is (time, seq); `seq` is a global insertion counter, so events at the same
picosecond run in the order they were scheduled and every run is bit-identical.
A 4-ary heap halves the depth of a binary one and keeps siblings in one cache line.
"""
from libc.stdint cimport int64_t, int32_t
from libc.stdlib cimport realloc
from rocesim._core.defs cimport Sim, Event, ERR_NOMEM


cdef inline bint _before(Event* a, Event* b) noexcept nogil:
    return a.time < b.time or (a.time == b.time and a.seq < b.seq)


cdef inline void heap_push(Sim* s, int64_t time, int32_t kind, int32_t target,
                           int64_t arg) noexcept nogil:
    cdef Event* h
    cdef int64_t i, parent
    cdef Event ev
    if s.heap_n == s.heap_cap:
        h = <Event*> realloc(s.heap, 2 * s.heap_cap * sizeof(Event))
        if h == NULL:
            s.error = ERR_NOMEM
            return
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
