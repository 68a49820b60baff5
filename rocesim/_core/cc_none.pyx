# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Congestion control `none`: every flow sends at line rate, PFC alone prevents loss.

Parameter `window`: bytes in flight per flow; 0 (default) means no window, -1 one
bandwidth-delay product of the flow's path (line rate x base RTT), as the HPCC
fork's "has_win" option does.
"""
from libc.stdint cimport int64_t, int32_t
from libc.stdlib cimport malloc, free
from rocesim._core.defs cimport Sim, Flow, CCOps
from rocesim._core.cc cimport sim_of, cc_ops_clear, bdp_bytes

cdef struct NoneState:
    int64_t window


cdef void _start(Sim* s, int32_t f) noexcept:
    cdef Flow* fl = &s.flows[f]
    cdef int64_t w = (<NoneState*> s.cc.state).window
    fl.rate_bps = fl.line_rate
    fl.window = bdp_bytes(fl) if w < 0 else w


cdef void _free(void* state) noexcept:
    free(state)


def install(core, params):
    """Set up scheme `none` on the simulation of `core` (an engine.Core)."""
    cdef Sim* s = sim_of(core)
    cdef NoneState* st = <NoneState*> malloc(sizeof(NoneState))
    if st == NULL:
        raise MemoryError()
    st.window = int(params.get("window", 0))
    cc_ops_clear(&s.cc)
    s.cc.state = st
    s.cc.free_state = _free
    s.cc.on_start = _start


# --- declaration: parameters, defaults and needs (discovered by rocesim.cc.registry) ---

from rocesim.config import Key
from rocesim.cc.scheme import Scheme, window

SCHEME = Scheme(
    "none", __name__, "no congestion control: line rate, PFC alone prevents loss",
    {"window": Key(window, "none", "bytes in flight per flow: 'none', 'bdp' (line rate x base RTT) or a size")})
