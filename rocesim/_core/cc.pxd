# cython: language_level=3
"""Helpers shared by the congestion-control schemes (one scheme per file: cc_*.pyx).

A scheme fills a `CCOps` (defs.pxd) through its module's `install(core, params)`
function: callbacks for flow start, ACK (with ECN echo, RTT sample and
INT records), NACK, CNP, timeout and its own timers.  It steers a flow only by
writing `Flow.rate_bps` (pacing) and `Flow.window` (bytes in flight, 0 = none);
the NIC reads both before every packet.
"""
from libc.stdint cimport int64_t, int32_t
from libc.stdlib cimport calloc, free
from cpython.pycapsule cimport PyCapsule_GetPointer
from rocesim._core.defs cimport Sim, Flow, CCOps, AckInfo, EV_CC_TIMER
from rocesim._core.heap cimport heap_push


cdef inline Sim* sim_of(object core) except NULL:
    """The C simulation behind an `engine.Core` (what a scheme's `install(core, params)` gets)."""
    return <Sim*> PyCapsule_GetPointer(core.capsule(), b"rocesim.Sim")


cdef inline void cc_timer(Sim* s, int32_t f, int64_t delay_ps, int64_t timer_id) noexcept:
    """Call the scheme's on_timer(f, timer_id) after delay_ps."""
    heap_push(s, s.now + delay_ps, EV_CC_TIMER, f, timer_id)


cdef inline void cc_noop_flow(Sim* s, int32_t f) noexcept:
    pass


cdef inline void cc_noop_ack(Sim* s, int32_t f, AckInfo* a) noexcept:
    pass


cdef inline void cc_noop_timer(Sim* s, int32_t f, int64_t arg) noexcept:
    pass


cdef inline void cc_ops_clear(CCOps* ops) noexcept:
    """Every callback a no-op, no state: a scheme then sets what it uses."""
    ops.on_start = cc_noop_flow
    ops.on_ack = cc_noop_ack
    ops.on_nack = cc_noop_flow
    ops.on_cnp = cc_noop_flow
    ops.on_timeout = cc_noop_flow
    ops.on_timer = cc_noop_timer
    ops.free_state = NULL
    ops.state = NULL
    ops.needs_cnp = 0


cdef struct CCState:
    void* flows            # every scheme's state starts with its per-flow array


cdef inline void* cc_new_state(Sim* s, size_t state_size, size_t flow_size) except NULL:
    """A zeroed scheme state of `state_size` bytes whose first member points to a zeroed
    array of one `flow_size` record per flow."""
    cdef void* st = calloc(1, state_size)
    cdef void* flows = calloc(s.n_flows if s.n_flows > 0 else 1, flow_size)
    if st == NULL or flows == NULL:
        free(st)
        free(flows)
        raise MemoryError()
    (<CCState*> st).flows = flows
    return st


cdef inline void cc_free_state(void* st) noexcept:
    if st != NULL:
        free((<CCState*> st).flows)
        free(st)


cdef inline void cc_install(Sim* s, void* st) noexcept:
    """Make `st` (from cc_new_state) the simulation's scheme state; callbacks start as no-ops."""
    cc_ops_clear(&s.cc)
    s.cc.state = st
    s.cc.free_state = cc_free_state
