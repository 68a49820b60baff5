# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Congestion control `none`: every flow sends at line rate, PFC alone prevents loss.

Parameter `window`: bytes in flight per flow; 'none' (default) means no window, 'bdp'
the largest bandwidth-delay product between two hosts, as the HPCC fork's "has_win"
option sets it.
"""
cimport cython
from libc.stdint cimport int64_t, int32_t
from rocesim._core.defs cimport Sim, Qp
from rocesim._core.qp cimport qp_of
from rocesim._core.cc cimport sim_of, cc_new_state, cc_install
from rocesim._core.declare import check_fields, declared_values, window_bytes


cdef struct NoneParams:       # DECLARATION's parameters (end of file), by the same names
    int64_t window            # bytes, 0 = none


cdef void _start(Sim* s, int32_t f) noexcept nogil:
    cdef Qp* fl = qp_of(s, f)
    fl.rate_bps = fl.line_rate
    fl.window = (<NoneParams*> s.w.cc.state).window


def install(core, params):
    """Set up scheme `none` on the simulation of `core` (an engine.Core): `params` are
    DECLARATION's, finalized (window in bytes)."""
    cdef Sim* s = sim_of(core)
    cdef NoneParams p = declared_values(DECLARATION, params)
    check_fields(DECLARATION, p)
    cdef NoneParams* st = <NoneParams*> cc_new_state(s, sizeof(NoneParams))
    st[0] = p
    cc_install(s, st, 0)
    s.w.cc.on_start = _start


# --- declaration (rocesim._core.declare; rocesim.cc.registry makes it a Scheme) ---------------

with cython.cdivision(False):    # Python's division here: under cdivision, C's 1 / 256 is 0
    def _none_finalize(p, ctx):
        return dict(p, window=window_bytes(p["window"], ctx))

    DECLARATION = dict(
        name="none",
        doc="no congestion control: line rate, PFC alone prevents loss",
        params=(
            ("window", ("window",), "none", "bytes in flight per flow: 'none', 'bdp' (the largest BDP "
                                            "between two hosts, as the fork's has_win) or a size"),
        ),
        finalize=_none_finalize,
    )
