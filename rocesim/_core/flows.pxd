# cython: language_level=3
from libc.stdint cimport int64_t, int32_t, uint32_t
from rocesim._core.defs cimport Sim

cdef int64_t flow_base_rtt(Sim* s, int32_t f, int32_t* hops) noexcept nogil
cdef void flow_delivered(Sim* s, int32_t f) noexcept nogil
cdef void flows_next_root(Sim* s) noexcept nogil
cdef void flow_activate(Sim* s, int32_t f) noexcept nogil
cdef void flow_finish(Sim* s, int32_t f) noexcept nogil
cdef void flow_compute_done(Sim* s, int32_t f) noexcept nogil
cdef int32_t trace_path(Sim* s, int32_t src, int32_t dst, uint32_t hash, int32_t path_off,
                        int32_t* out, int32_t cap) noexcept nogil
cdef int64_t flow_ideal_fct(Sim* s, int32_t f) noexcept nogil
cdef int32_t flow_top_switch(Sim* s, int32_t f) noexcept nogil
cdef int64_t pair_base_rtt(Sim* s, int32_t src, int32_t dst) noexcept nogil
