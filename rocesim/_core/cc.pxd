# cython: language_level=3
"""Helpers shared by the congestion-control schemes (one scheme per file: cc_*.pyx).

A scheme fills a `CCOps` (defs.pxd) through its module's `install(core, params)`
function: callbacks for flow start, ACK (with ECN echo, RTT sample and
INT records), NACK, CNP, timeout and its own timers.  It steers a flow only by
writing its queue pair's `Qp.rate_bps` (pacing) and `Qp.window` (bytes in flight,
0 = none); the NIC reads both before every packet.  Its per-flow state
(`flow_state_size` bytes, zeroed at the flow's start) sits beside the flow's queue pair:
`qp.cc_flow_state(s, f)`.  Its parameters, defaults and needs are its module's
`DECLARATION` (declare.py says how), which `install` turns into its parameter struct.
"""
from libc.stdint cimport int64_t, int32_t
from libc.stdlib cimport calloc, free
from cpython.pycapsule cimport PyCapsule_GetPointer
from rocesim._core.defs cimport Sim, World, CCOps, AckInfo, EV_CC_TIMER
from rocesim._core.events cimport ev_push


cdef inline Sim* sim_of(object core) except NULL:
    """The C simulation behind an `engine.Core` (what a scheme's `install(core, params)` gets)."""
    return <Sim*> PyCapsule_GetPointer(core.capsule(), b"rocesim.Sim")


cdef inline void cc_timer(Sim* s, int32_t f, int64_t delay_ps, int64_t timer_id) noexcept nogil:
    """Call the scheme's on_timer(f, timer_id) after delay_ps."""
    ev_push(s, s.now + delay_ps, EV_CC_TIMER, f, timer_id)


cdef inline void cc_noop_flow(Sim* s, int32_t f) noexcept nogil:
    pass


cdef inline void cc_noop_ack(Sim* s, int32_t f, AckInfo* a) noexcept nogil:
    pass


cdef inline void cc_noop_timer(Sim* s, int32_t f, int64_t arg) noexcept nogil:
    pass


cdef inline void cc_ops_clear(CCOps* ops) noexcept nogil:
    """Every callback a no-op, no state: a scheme then sets what it uses."""
    ops.on_start = cc_noop_flow
    ops.on_ack = cc_noop_ack
    ops.on_nack = cc_noop_flow
    ops.on_cnp = cc_noop_flow
    ops.on_timeout = cc_noop_flow
    ops.on_timer = cc_noop_timer
    ops.free_state = NULL
    ops.state = NULL
    ops.flow_state_size = 0
    ops.needs_cnp = 0


cdef inline void* cc_new_state(Sim* s, size_t state_size) except NULL:
    """A zeroed scheme state of `state_size` bytes (the scheme's parameters).  Per-flow state
    lives beside each flow's queue pair (qp.cc_flow_state), sized by cc_install."""
    cdef void* st = calloc(1, state_size)
    if st == NULL:
        raise MemoryError()
    return st


cdef inline void cc_free_state(void* st) noexcept nogil:
    free(st)


cdef inline void cc_install(Sim* s, void* st, size_t flow_state_size) noexcept nogil:
    """Make `st` (from cc_new_state) the simulation's scheme state, with `flow_state_size`
    bytes of zeroed state per active flow; callbacks start as no-ops."""
    cdef World* w = s.w
    cc_ops_clear(&w.cc)
    w.cc.state = st
    w.cc.free_state = cc_free_state
    w.cc.flow_state_size = <int32_t> flow_state_size
