# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Congestion control `none`: every flow sends at line rate, PFC alone prevents loss.

Parameter `window`: bytes in flight per flow; 'none' (default) means no window, 'bdp'
the largest bandwidth-delay product between two hosts, as the HPCC fork's "has_win"
option sets it.
"""
from libc.stdint cimport int64_t, int32_t
from libc.stdlib cimport malloc, free
from rocesim._core.defs cimport Sim, Qp
from rocesim._core.qp cimport qp_of
from rocesim._core.cc cimport sim_of, cc_ops_clear

cdef struct NoneState:
    int64_t window


cdef void _start(Sim* s, int32_t f) noexcept:
    cdef Qp* fl = qp_of(s, f)
    fl.rate_bps = fl.line_rate
    fl.window = (<NoneState*> s.cc.state).window


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
from rocesim.cc.scheme import Scheme, window, window_bytes


def _none_finalize(p, ctx):
    return dict(p, window=window_bytes(p["window"], ctx))


SCHEME = Scheme(
    "none", __name__, "no congestion control: line rate, PFC alone prevents loss",
    {"window": Key(window, "none", "bytes in flight per flow: 'none', 'bdp' (the largest BDP "
                                   "between two hosts, as the fork's has_win) or a size")},
    finalize=_none_finalize)
