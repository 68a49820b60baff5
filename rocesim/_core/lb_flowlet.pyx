# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Load balancing `flowlet`: a queue pair's packets keep their port while they come close
together; after a pause longer than `gap` (a new flowlet: the packets already sent have
likely arrived, so moving cannot reorder them) the next one may take another port, at
random (LetFlow, Vanini et al., NSDI 2017) or the least loaded one by its egress queue
(CONGA-like, Alizadeh et al., SIGCOMM 2014; here from the switch's own queues, not from
path feedback).  The switch keeps a bounded table indexed by hash (`table_size` entries:
flows sharing an entry share a flowlet), as switches do.
"""
cimport cython
from libc.stdint cimport int64_t, int32_t, uint32_t, uint64_t
from rocesim._core.defs cimport Sim, Switch, Packet, NIL
from rocesim._core.lb cimport (Flowlet, flowlet_slots, flowlets_clear, lb_sim_of, lb_state_at, least_loaded,
                             flowlet_of)
from rocesim._core.rng cimport rng_next
from rocesim._core.declare import LB_QUEUE_LEVELS, check_fields, declared_values

cdef enum:
    RANDOM = 0             # `choice`'s options, in DECLARATION's order
    LEAST_LOADED = 1


cdef struct FlowletParams:  # DECLARATION's parameters, by the same names
    int64_t gap
    int32_t choice
    int32_t table_size
    int64_t level_1
    int64_t level_2
    int64_t level_3


cdef struct FlowletState:
    FlowletParams p
    int64_t levels[3]
    uint32_t mask
    Flowlet table[1]       # table_size entries (a power of two)


cdef int32_t _pick(Sim* s, Switch* sw, int32_t off, int32_t cnt, int32_t cls, uint32_t hash,
                   Packet* pk) noexcept nogil:
    cdef FlowletState* st = <FlowletState*> sw.lb_state
    cdef Flowlet* e = flowlet_of(st.table, st.mask, hash, cls)
    if e.last == NIL or s.now - e.last > st.p.gap or e.index >= cnt:
        if st.p.choice == RANDOM:
            e.index = <int32_t> (rng_next(&s.rng) % <uint64_t> cnt)
        else:
            e.index = least_loaded(s, sw, off, cnt, st.levels, 3, hash, False)
    e.last = s.now
    return e.index


def install(core, switches, params):
    """Flowlet switching at every switch of `switches` (indices 0..n_switches-1)."""
    cdef Sim* s = lb_sim_of(core)
    cdef FlowletParams p = declared_values(DECLARATION, params)
    check_fields(DECLARATION, p)
    cdef FlowletState* st
    cdef int32_t k, n = flowlet_slots(p.table_size)
    for k in switches:
        st = <FlowletState*> lb_state_at(s, k, sizeof(FlowletState) + n * sizeof(Flowlet))
        st.p = p
        st.levels[0], st.levels[1], st.levels[2] = p.level_1, p.level_2, p.level_3
        st.mask = n - 1
        flowlets_clear(st.table, n)
        s.w.sw[k].lb_pick = _pick


with cython.cdivision(False):
    DECLARATION = dict(
        name="flowlet",
        doc="per flowlet: a queue pair's packets may move to another port after a pause longer "
            "than `gap` (LetFlow: at random; CONGA-like: the least loaded)",
        fluid=("ecmp", "each queue pair on its ECMP path: a fluid flow has no gaps, so its flowlets "
                       "never move"),
        params=(
            ("gap", ("positive_time",), "10us", "a pause longer than this starts a new flowlet "
                                                "(csg-htsim's -ar_sticky_delta default)"),
            ("choice", ("choice", ("random", "least_loaded")), "random",
             "a new flowlet's port: random (LetFlow) or the one with the least queued bytes (CONGA-like)"),
            ("table_size", ("integer", 1, 1 << 24), 4096, "flowlet table entries per switch (rounded up "
                                                          "to a power of two)"),
            *LB_QUEUE_LEVELS,
        ),
    )
