# cython: language_level=3
from libc.stdint cimport int64_t
from rocesim._core.defs cimport Sim, Event, ERR_NONE
from rocesim._core.events cimport ev_next

cdef enum StopReason:
    STOP_EMPTY = 0         # no event left: every flow that could finish has finished
    STOP_TIME = 1          # the next event is later than `until`
    STOP_EVENTS = 2        # the slice's event budget is spent
    STOP_DEADLOCK = 3      # the deadlock detector found a cycle and stops at the first

cdef int run_loop(Sim* s, int64_t until, int64_t max_events) noexcept nogil


cdef inline bint event_due(Sim* s, int64_t until, int64_t n, int64_t max_events, int* status) noexcept nogil:
    """Whether the event loop (packet or fluid) runs its next event, its `n`-th in this slice;
    when not, `status` says why (left unchanged when no event is left, or on an error)."""
    cdef Event* nxt
    if s.n_events <= 0 or s.error != ERR_NONE:
        return False
    nxt = ev_next(s)
    if nxt == NULL:
        return False                          # out of memory: s.error is set
    if nxt.time > until:
        status[0] = STOP_TIME
        return False
    if n >= max_events:
        status[0] = STOP_EVENTS
        return False
    return True
