# cython: language_level=3
"""C arrays: growable ones (room for one more element, doubling the capacity), and zeroed
ones on cache-line boundaries."""
from libc.stdint cimport int64_t
from libc.stdlib cimport realloc
from libc.string cimport memset
from posix.stdlib cimport posix_memalign


cdef inline void* zeroed_lines(size_t nbytes) noexcept nogil:
    """Zeroed memory on a 64-byte boundary (free() releases it), or NULL: for arrays whose
    elements are written by different threads, each element a whole number of lines."""
    cdef void* mem = NULL
    if posix_memalign(&mem, 64, nbytes) != 0:
        return NULL
    memset(mem, 0, nbytes)
    return mem


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
