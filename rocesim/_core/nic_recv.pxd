# cython: language_level=3
from libc.stdint cimport int32_t, int64_t
from rocesim._core.defs cimport Sim

cdef void nic_receive(Sim* s, int32_t host, int32_t i) noexcept nogil
cdef void nic_ack_timer(Sim* s, int32_t f, int64_t t) noexcept nogil
