# cython: language_level=3
from libc.stdint cimport int64_t, int32_t
from rocesim._core.defs cimport Sim

cdef enum FaultKind:
    F_NIC_STOP = 0         # target = host: its NIC stops draining its receive side (pauses its link)
    F_NIC_RESUME = 1       # target = host: it drains again (RESUME frames)
    F_LINK_DOWN = 2        # target = port: its link (both directions) goes down
    F_LINK_UP = 3          # target = port: it comes back
    F_LINK_RATE = 4        # target = port: both directions run at `value` bit/s from now

cdef struct Fault:
    int64_t time
    int64_t value
    int32_t kind
    int32_t target

cdef struct FaultState:
    Fault* f
    int32_t n
    int64_t* rx_room       # per host: bytes its stopped NIC can still take in

cdef int faults_init(Sim* s, Fault* faults, int32_t n) noexcept nogil
cdef void faults_free(Sim* s) noexcept nogil
cdef void fault_apply(Sim* s, int32_t k) noexcept nogil
cdef void fault_lost_arrival(Sim* s, int32_t port, int32_t i) noexcept nogil
cdef void fault_nic_arrival(Sim* s, int32_t port, int32_t i) noexcept nogil
