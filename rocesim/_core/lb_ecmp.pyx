# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Load balancing `ecmp` (the default): a data packet's equal-cost port is a function of its
queue pair's 5-tuple hash (and the entropy its sender put on it, if any) and the switch's seed,
so every packet of a queue pair takes one path (routing.ecmp_index; the HPCC fork hashes the
same way, with a seed per switch).  The switch's choice function stays NULL: route_lookup
computes ECMP inline.
"""
from libc.stdint cimport int32_t
from rocesim._core.defs cimport Sim
from rocesim._core.lb cimport lb_sim_of


def install(core, switches, params):
    """ECMP at every switch of `switches` (indices 0..n_switches-1); it has no parameters."""
    cdef Sim* s = lb_sim_of(core)
    cdef int32_t k
    for k in switches:
        s.w.sw[k].lb_pick = NULL


DECLARATION = dict(
    name="ecmp",
    doc="per 5-tuple hash: every packet of a queue pair takes one path (with the sender's entropy, "
        "every packet of one entropy value)",
    params=(),
    fluid=("ecmp", "each queue pair on the path its 5-tuple hashes to, as its packets"),
)
