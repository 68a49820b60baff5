# cython: language_level=3
"""The host's set of flows with data to send (the NIC scans it round-robin).

`Host.active` is an unordered array; a flow is in it while it may have data to send
(`Flow.in_active`), and `Host.prio_active` counts them per priority so that the NIC can
skip the scan when PFC pauses every priority it has flows in.
"""
from libc.stdint cimport int32_t
from libc.stdlib cimport realloc
from rocesim._core.defs cimport Sim, Flow, Host, ERR_NOMEM


cdef inline void active_add(Sim* s, int32_t f) noexcept:
    cdef Flow* fl = &s.flows[f]
    cdef Host* h = &s.hosts[fl.src]
    cdef int32_t* grown
    cdef int32_t cap
    if fl.in_active:
        return
    if h.n_active == h.cap_active:
        cap = 8 if h.cap_active == 0 else 2 * h.cap_active
        grown = <int32_t*> realloc(h.active, cap * sizeof(int32_t))
        if grown == NULL:
            s.error = ERR_NOMEM
            return
        h.active = grown
        h.cap_active = cap
    h.active[h.n_active] = f
    h.n_active += 1
    h.prio_active[fl.prio] += 1
    fl.in_active = 1


cdef inline void active_remove_at(Sim* s, Host* h, int32_t idx) noexcept:
    s.flows[h.active[idx]].in_active = 0
    h.prio_active[s.flows[h.active[idx]].prio] -= 1
    h.n_active -= 1
    h.active[idx] = h.active[h.n_active]


cdef inline void active_remove(Sim* s, int32_t f) noexcept:
    cdef Host* h = &s.hosts[s.flows[f].src]
    cdef int32_t k
    for k in range(h.n_active):
        if h.active[k] == f:
            active_remove_at(s, h, k)
            if h.rr >= h.n_active:
                h.rr = 0
            return
