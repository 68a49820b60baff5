# cython: language_level=3
from libc.stdint cimport int32_t
from rocesim._core.defs cimport Sim

cdef void switch_receive(Sim* s, int32_t in_port, int32_t i) noexcept
cdef void switch_port_tx(Sim* s, int32_t port) noexcept
