# cython: language_level=3
from libc.stdint cimport int64_t, int32_t, uint8_t
from rocesim._core.defs cimport Sim

cdef enum WatchdogAction:
    WD_DROP = 0            # flush the stormed queue, drop its arrivals, pause the peer no more
    WD_FORWARD = 1         # ignore the peer's PAUSE frames for that priority

cdef struct WDState:
    int64_t interval       # polling interval
    int64_t detection      # paused and not draining, with packets, this long: a storm
    int64_t restoration    # no PAUSE from the peer this long: back to lossless
    int32_t action
    int64_t next_at        # a run in parts: the next poll's time (INT64_MAX: none); with one
                           #   part the poll is an event (EV_WATCHDOG)
    int64_t* since         # [port * NPRIO + prio]: paused_since seen at the first poll that
                           #   found the queue stuck, or -1
    int64_t* calm_since    # stormed queues: since when the peer no longer pauses, or -1
    uint8_t* stormed

cdef int watchdog_init(Sim* s, int64_t interval, int64_t detection, int64_t restoration,
                       int32_t action) noexcept nogil
cdef void watchdog_free(Sim* s) noexcept nogil
cdef void watchdog_poll(Sim* s) noexcept nogil
cdef bint watchdog_poll_at(Sim* s, int64_t now) noexcept nogil
cdef void watchdog_again(Sim* s, int64_t now, bint watching, bint busy, int64_t flows_done) noexcept nogil
