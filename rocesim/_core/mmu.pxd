# cython: language_level=3
from libc.stdint cimport int64_t, int32_t
from rocesim._core.defs cimport Sim, Switch, Packet

cdef bint mmu_admit(Sim* s, Switch* sw, int32_t in_port, int32_t out_port,
                    int32_t prio, int32_t out_prio, int32_t size) noexcept nogil
cdef void mmu_release(Sim* s, Switch* sw, Packet* pk) noexcept nogil
cdef bint mmu_ecn_mark(Sim* s, int32_t port, int32_t prio) noexcept nogil
cdef void pfc_send(Sim* s, int32_t port, int32_t prio, bint on) noexcept nogil
