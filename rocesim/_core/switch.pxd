# cython: language_level=3
from libc.stdint cimport int32_t, int64_t, uint32_t
from rocesim._core.defs cimport Sim

cdef void switch_receive(Sim* s, int32_t in_port, int32_t i) noexcept nogil
cdef void switch_port_tx(Sim* s, int32_t port) noexcept nogil
cdef int64_t switch_flush(Sim* s, int32_t port, uint32_t prio_mask) noexcept nogil
