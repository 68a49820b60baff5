# cython: language_level=3
from libc.stdint cimport int32_t
from rocesim._core.defs cimport Sim, Qp, Packet

cdef void rccc_on_data(Sim* s, int32_t f, Qp* rx, int32_t i) noexcept nogil
cdef void rccc_on_trimmed(Sim* s, int32_t f, Qp* rx, int32_t i) noexcept nogil
cdef void rccc_pace(Sim* s, int32_t host) noexcept nogil
cdef void rccc_on_pull(Sim* s, int32_t i) noexcept nogil
