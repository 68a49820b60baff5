# cython: language_level=3
from libc.stdint cimport int64_t, int32_t
from rocesim._core.defs cimport Sim

cdef int64_t monitors_next(Sim* s) noexcept nogil
cdef int64_t monitors_end(Sim* s, int64_t end) noexcept nogil
cdef int windows_monitors(Sim** parts, int32_t n, int64_t t) noexcept nogil
