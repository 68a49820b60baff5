# cython: language_level=3
from libc.stdint cimport int64_t
from rocesim._core.defs cimport Sim

cdef enum StopReason:
    STOP_EMPTY = 0         # no event left: every flow that could finish has finished
    STOP_TIME = 1          # the next event is later than `until`
    STOP_EVENTS = 2        # the slice's event budget is spent
    STOP_DEADLOCK = 3      # the deadlock detector found a cycle and stops at the first

cdef int run_loop(Sim* s, int64_t until, int64_t max_events) noexcept
