# cython: language_level=3
from libc.stdint cimport int64_t, int32_t
from rocesim._core.defs cimport Sim

cdef struct Windows:
    # A run in parts (issue 20): the state of its windows, held by the Core.
    int64_t lookahead      # ps: the smallest delay of a cut link (rocesim.network.partition)
    int64_t open_end       # the end (exclusive) of the window a slice stopped inside, or -1
    int32_t* order         # the parts in the order phase 1 offers them (debug.part_order;
                           #   with threads: the costliest first, re-sorted as they run)
    int64_t* next_t        # per part: its earliest pending event (INT64_MAX: none)
    int64_t* cost          # per part: events run lately (the threads' load balance)
    int32_t* active        # the parts with an event in the open window, in `order`
    int32_t n_active
    int64_t* ran           # per part: the events it ran in the open window
    int32_t* taken         # per part: the hand-offs it took at the window's end
    int32_t* runner        # per part: the thread that ran it in the open window (-1: none)
    int64_t* profile       # Core.window_profile: (window, part, events, hand-offs) per part
    int64_t n_profile      #   busy in a window, when `profiling`; NULL otherwise
    int64_t cap_profile
    bint profiling
    int64_t windows        # windows closed so far
    int64_t busy_windows   # ... of which some part ran an event
    int64_t open_events    # events run so far in the open window
    int64_t handoffs       # packets taken from hand-off records (link crossings between parts)
    int64_t deps           # dependency messages applied (a parent and its child in two parts)
    int64_t pkt_peak       # the most packets in the parts' pools at a window's end
    int64_t qp_peak        # the same for queue pairs

cdef int windows_init(Windows* win, int32_t n, int64_t lookahead) noexcept nogil
cdef void windows_free(Windows* win) noexcept nogil
cdef int windows_run(Sim** parts, int32_t n, Windows* win, int64_t until, int64_t max_events,
                     int32_t threads) noexcept nogil
cdef int64_t windows_next(Sim** parts, int32_t n) noexcept nogil
cdef bint windows_idle(Sim** parts, int32_t n) noexcept nogil
cdef int windows_max_threads() noexcept nogil
