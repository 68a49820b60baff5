# cython: language_level=3
from libc.stdint cimport int32_t
from rocesim._core.defs cimport Sim

cdef void nic_rto(Sim* s, int32_t f) noexcept nogil
