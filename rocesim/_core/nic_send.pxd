# cython: language_level=3
from libc.stdint cimport int32_t, int64_t
from rocesim._core.defs cimport Sim

cdef void nic_kick(Sim* s, int32_t host) noexcept nogil
cdef void nic_port_tx(Sim* s, int32_t port) noexcept nogil
cdef void nic_rate_changed(Sim* s, int32_t f, int64_t old_rate) noexcept nogil
cdef void sched_update(Sim* s, int32_t f) noexcept nogil
cdef void nic_start_flow(Sim* s, int32_t f) noexcept nogil
cdef void nic_on_ack(Sim* s, int32_t i) noexcept nogil
cdef void nic_on_unordered_ack(Sim* s, int32_t i) noexcept nogil
cdef void nic_on_cnp(Sim* s, int32_t i) noexcept nogil
