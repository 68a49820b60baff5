# cython: language_level=3
"""Helpers shared by the load-balancing schemes (one scheme per file: lb_*.pyx).

A scheme chooses, at a switch, among the equal-cost egress ports of a packet's route group
(routing.route_lookup calls its `lb_pick_fn`, defs.pxd; a scheme of NULL takes ECMP).  Control
packets (ACKs, NACKs, CNPs) are balanced as data is, on their reverse 5-tuple's hash: a
switch's load balancing does not read the transport header that would tell them apart.  Its module's `install(core, switches, params)` gives each switch of
`switches` its choice function and one block of state (`Switch.lb_state`: the parameters
and any table, freed with the world).  A scheme reads only its own switch's state and egress
queues, and draws from the part's random stream (`Sim.rng`): a run in parts stays
deterministic, whatever its threads.  Its parameters, defaults and meaning are its module's
`DECLARATION` (rocesim/lb/registry.py reads it, as rocesim/cc/registry.py reads the
congestion-control schemes'), with `fluid=(way, note)`: how flow mode approximates the scheme
(`ecmp` or `split`: fluid.pyx).
"""
from libc.stdint cimport int64_t, int32_t, uint32_t, uint64_t
from libc.stdlib cimport calloc
from cpython.pycapsule cimport PyCapsule_GetPointer
from rocesim._core.defs cimport Sim, World, Port, Switch, lb_pick_fn, NPRIO, NIL
from rocesim._core.rng cimport mix64, rng_next
from rocesim._core.routing cimport ecmp_index


cdef enum:
    LB_LEVELS_KEPT = 64    # least_loaded keeps this many ports' levels on the stack (more: read twice)


cdef struct Flowlet:       # a flowlet table's entry (LetFlow, CONGA; csg-htsim's adaptive routing)
    int64_t last           # ps: when a packet of a flow hashed here last left this switch
    int32_t index          # the equal-cost port it took (an index into its route group)
    int32_t _pad


cdef inline Sim* lb_sim_of(object core) except NULL:
    """The C simulation behind an `engine.Core` (what a scheme's `install` gets)."""
    return <Sim*> PyCapsule_GetPointer(core.capsule(), b"rocesim.Sim")


cdef inline void* lb_state_at(Sim* s, int32_t switch, size_t size) except NULL:
    """A zeroed block of `size` bytes as switch `switch`'s (0..n_switches-1) scheme state,
    freed with the world."""
    cdef Switch* sw = &s.w.sw[switch]
    cdef void* st = calloc(1, size)
    if st == NULL:
        raise MemoryError()
    sw.lb_state = st
    return st


cdef inline int64_t port_queued(Port* p) noexcept nogil:
    """Bytes waiting in every egress queue of port `p`."""
    cdef int64_t q = 0
    cdef int32_t k
    for k in range(NPRIO):
        q += p.q_bytes[k]
    return q


cdef inline int32_t queue_level(int64_t queued, int64_t* thresholds, int32_t n) noexcept nogil:
    """`queued` bytes quantized: the number of the `n` ascending thresholds it reaches (csg-htsim
    compares its egress queues so, in 4 levels: below 5%, 10%, 20% of a queue, or above)."""
    cdef int32_t level = 0
    while level < n and queued >= thresholds[level]:
        level += 1
    return level


cdef inline int32_t least_loaded(Sim* s, Switch* sw, int32_t off, int32_t cnt, int64_t* thresholds, int32_t n,
                                 uint32_t hash, bint random_ties) noexcept nogil:
    """The index (0..cnt-1) of the equal-cost port route_ports[off ..] with the lowest queue
    level; among ties, the one ECMP would pick among them by `hash` at switch `sw` (so that
    with even queues the choice is ECMP's), or a random one."""
    cdef World* w = s.w
    cdef int32_t k, level, best = 1 << 30, n_best = 0, pick
    cdef int32_t levels[LB_LEVELS_KEPT]    # the first ports' levels, read once (every packet comes here)
    for k in range(cnt):
        level = queue_level(port_queued(&w.ports[w.route_ports[off + k]]), thresholds, n)
        if k < LB_LEVELS_KEPT:
            levels[k] = level
        if level < best:
            best, n_best = level, 1
        elif level == best:
            n_best += 1
    pick = <int32_t> (rng_next(&s.rng) % <uint64_t> n_best) if random_ties else ecmp_index(hash, sw.seed, n_best)
    for k in range(cnt):
        level = levels[k] if k < LB_LEVELS_KEPT else \
            queue_level(port_queued(&w.ports[w.route_ports[off + k]]), thresholds, n)
        if level == best:
            if pick == 0:
                return k
            pick -= 1
    return 0


cdef inline int32_t flowlet_slots(int64_t table_size) noexcept nogil:
    """A flowlet table's entries: `table_size` rounded up to a power of two (indexed by a mask)."""
    cdef int32_t n = 1
    while n < table_size:
        n <<= 1
    return n


cdef inline void flowlets_clear(Flowlet* table, int32_t n) noexcept nogil:
    """Every entry of a new flowlet table empty (no packet seen yet)."""
    cdef int32_t i
    for i in range(n):
        table[i].last = NIL


cdef inline Flowlet* flowlet_of(Flowlet* table, uint32_t mask, uint32_t hash, int32_t cls) noexcept nogil:
    """The flowlet table's entry of a packet of 5-tuple hash `hash` towards class `cls` (a
    bounded table indexed by hash, as switches keep it: two flows may share an entry)."""
    return &table[(mix64((<uint64_t> hash << 20) ^ <uint64_t> cls)) & mask]
