# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Load balancing `adaptive`: a data packet goes to the equal-cost port whose egress queue is
the least full, compared in quantized levels (csg-htsim's FatTreeSwitch::adaptive_route: 4
levels of queue occupancy), ties broken at random (as csg-htsim does) or by the packet's hash.
By default (`ties: auto`) a per-packet choice breaks them at random and a flowlet's by the
hash: per packet, ties by the hash pin a queue pair to its ECMP port whenever the queues are
within one level (below 6750 B, most of the time in a balanced fabric), so that per-packet
adaptive routing collides as ECMP does until a queue reaches a level, while another port
idles (a 4 MB permutation across a 1:1 fabric: 93% of what one switch carries with ties by
the hash, 98% at random; `python validation/lb_line_rate.py --sizes 4MB --buffers 400KB`).
With `gap: 0` every packet chooses (per-packet adaptive routing, as InfiniBand's and
NVIDIA Spectrum-X's switches route, whose NICs place packets on arrival); with a gap, a
queue pair keeps its port until a pause longer than the gap, and then moves only to a port
that is strictly less full (csg-htsim's sticky flowlets, `-ar_sticky_delta`), with the
chance `recheck` (csg-htsim tosses a fair coin before it re-evaluates: 0.5; the default 1
always re-evaluates and draws nothing).  Only the switch's own queues are read.
"""
cimport cython
from libc.stdint cimport int64_t, int32_t, uint32_t
from rocesim._core.defs cimport Sim, World, Switch, Packet, NIL
from rocesim._core.rng cimport rng_uniform
from rocesim._core.lb cimport (Flowlet, flowlet_slots, flowlets_clear, lb_sim_of, lb_state_at, least_loaded,
                               flowlet_of, port_queued, queue_level)
from rocesim._core.declare import LB_QUEUE_LEVELS, check_fields, declared_values

cdef enum:
    TIES_AUTO = 0          # `ties`' options, in DECLARATION's order
    TIES_HASH = 1
    TIES_RANDOM = 2


cdef struct AdaptiveParams:  # DECLARATION's parameters, by the same names
    int64_t gap
    int32_t ties
    int32_t table_size
    double recheck
    int64_t level_1
    int64_t level_2
    int64_t level_3


cdef struct AdaptiveState:
    AdaptiveParams p
    int64_t levels[3]
    uint32_t mask
    Flowlet table[1]       # gap > 0: table_size entries (a power of two)


cdef inline int32_t _level(Sim* s, AdaptiveState* st, int32_t off, int32_t k) noexcept nogil:
    cdef World* w = s.w
    return queue_level(port_queued(&w.ports[w.route_ports[off + k]]), st.levels, 3)


cdef int32_t _pick(Sim* s, Switch* sw, int32_t off, int32_t cnt, int32_t cls, uint32_t hash,
                   Packet* pk) noexcept nogil:
    cdef AdaptiveState* st = <AdaptiveState*> sw.lb_state
    cdef bint random_ties = st.p.ties == TIES_RANDOM
    cdef int32_t best
    cdef Flowlet* e
    if st.p.gap == 0:
        return least_loaded(s, sw, off, cnt, st.levels, 3, hash, random_ties)
    e = flowlet_of(st.table, st.mask, hash, cls)
    if e.last == NIL or e.index >= cnt:
        e.index = least_loaded(s, sw, off, cnt, st.levels, 3, hash, random_ties)
    elif s.now - e.last > st.p.gap and (st.p.recheck >= 1.0 or rng_uniform(&s.rng) < st.p.recheck):
        best = least_loaded(s, sw, off, cnt, st.levels, 3, hash, random_ties)
        if _level(s, st, off, best) < _level(s, st, off, e.index):
            e.index = best               # a new flowlet, and a strictly emptier port
    e.last = s.now
    return e.index


def install(core, switches, params):
    """Adaptive routing at every switch of `switches` (indices 0..n_switches-1)."""
    cdef Sim* s = lb_sim_of(core)
    cdef AdaptiveParams p = declared_values(DECLARATION, params)
    check_fields(DECLARATION, p)
    if p.ties == TIES_AUTO:
        p.ties = TIES_RANDOM if p.gap == 0 else TIES_HASH
    cdef AdaptiveState* st
    cdef int32_t k, n = flowlet_slots(p.table_size) if p.gap > 0 else 1
    for k in switches:
        st = <AdaptiveState*> lb_state_at(s, k, sizeof(AdaptiveState) + n * sizeof(Flowlet))
        st.p = p
        st.levels[0], st.levels[1], st.levels[2] = p.level_1, p.level_2, p.level_3
        st.mask = n - 1
        flowlets_clear(st.table, n)
        s.w.sw[k].lb_pick = _pick


with cython.cdivision(False):
    DECLARATION = dict(
        name="adaptive",
        doc="adaptive routing: the equal-cost port with the least queued bytes (quantized), per packet "
            "(gap 0) or per flowlet",
        fluid=("split", "each flow split evenly over the equal-cost ports (the queues it would steer by "
                        "are not modelled: an even split, not a split towards the emptier ports)"),
        params=(
            ("gap", ("time",), "0us", "0: every packet chooses; a time: a queue pair keeps its port "
                                      "until a pause longer than this (csg-htsim's -ar_sticky_delta)"),
            ("ties", ("choice", ("auto", "hash", "random")), "auto",
             "among equally empty ports: the packet's hash picks (a queue pair stays put while the "
             "queues are even) or a random draw (csg-htsim); auto: random per packet (gap 0), the "
             "hash with a gap"),
            ("table_size", ("integer", 1, 1 << 24), 4096, "with a gap: flowlet table entries per switch"),
            ("recheck", ("number", 0.0, 1.0), 1.0,
             "with a gap: the chance that a queue pair back from a pause longer than the gap looks for "
             "an emptier port (csg-htsim tosses a fair coin: 0.5)"),
            *LB_QUEUE_LEVELS,
        ),
    )
