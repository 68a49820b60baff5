# cython: language_level=3
"""Growable C arrays: room for one more element, doubling the capacity."""
from libc.stdint cimport int64_t
from libc.stdlib cimport realloc


cdef inline int room_for_one(void** arr, int64_t n, int64_t* cap, size_t elem,
                             int64_t first) noexcept nogil:
    """Make *arr (n elements of `elem` bytes, capacity *cap) hold one more: the capacity
    goes to `first`, then doubles.  -1 if out of memory (*arr unchanged)."""
    cdef int64_t c
    cdef void* grown
    if n < cap[0]:
        return 0
    c = first if cap[0] == 0 else 2 * cap[0]
    grown = realloc(arr[0], <size_t> c * elem)
    if grown == NULL:
        return -1
    arr[0] = grown
    cap[0] = c
    return 0
