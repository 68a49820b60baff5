# cython: language_level=3
"""The PFC timeline: every interval during which a port's priority was paused.

Recorded when a pause ends (the start is the port's `paused_since`), in one C array that
grows by doubling; intervals still open at the end are read from the ports.  Nothing is
done per packet: one append per RESUME that changes a port's state.  The array is capped
at TL_MAX records (24 B each, 96 MB); beyond, intervals are counted in `tl_lost`.
"""
from libc.stdint cimport int64_t, int32_t
from libc.stdlib cimport realloc
from rocesim._core.defs cimport Sim, PauseRec

cdef enum:
    TL_INITIAL = 1024
    TL_MAX = 4194304


cdef inline void timeline_add(Sim* s, int32_t port, int32_t prio, int64_t start, int64_t end) noexcept nogil:
    cdef PauseRec* grown
    cdef int64_t cap
    if s.tl_n == s.tl_cap:
        if s.tl_cap >= TL_MAX:
            s.tl_lost += 1
            return
        cap = TL_INITIAL if s.tl_cap == 0 else 2 * s.tl_cap
        grown = <PauseRec*> realloc(s.tl, cap * sizeof(PauseRec))
        if grown == NULL:
            s.tl_lost += 1
            return
        s.tl = grown
        s.tl_cap = cap
    s.tl[s.tl_n].start = start
    s.tl[s.tl_n].end = end
    s.tl[s.tl_n].port = port
    s.tl[s.tl_n].prio = prio
    s.tl_n += 1
