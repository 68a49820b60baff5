# cython: language_level=3
from libc.stdint cimport int64_t, int32_t, int8_t, uint8_t
from rocesim._core.defs cimport Sim, Handoff
from rocesim._core.thread_count cimport ThreadCount

cdef struct PartWin:
    # A part's state in the windows, on a 64-byte line of its own (`Windows.part`): the
    # thread that runs the part writes it, and another part's on the same line would
    # move that line between the cores at every turn.
    int64_t next_t         # its earliest pending event (INT64_MAX: none)
    int64_t cost           # events run lately (the threads' load balance)
    int64_t ran            # the events it ran in the open window (the profile)
    int64_t claimed        # the `stamp` of the turn a thread last claimed it in
    int32_t taken          # the hand-offs it took at the window's end (the profile)
    int32_t tier           # the fewest links from a host to one of its nodes (0: it holds hosts)
    int32_t start_head     # the starts of children whose last parent was in another part,
    int32_t start_tail     #   pushed when it next runs: a list in `Windows.starts` (-1: none)
    int8_t has_in          # it has hand-offs to take (counted in set 1 - cur of `noted`)
    int8_t _pad[15]


cdef struct Windows:
    # A run in parts (issue 20): the state of its windows, held by the Core.
    int64_t lookahead      # ps: the smallest delay of a cut link (rocesim.network.partition)
    int64_t open_end       # the end (exclusive) of the window a slice stopped inside, or -1
    PartWin* part          # per part: its state in the windows
    int32_t* order         # the parts in the order a window offers them (debug.part_order;
                           #   with threads: the costliest first, re-sorted as they run)
    int32_t* active        # the parts the open window visits, in `order`
    int32_t n_active
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
    # Hand-offs are taken by their receiving part when it next runs (window.pyx): the
    # parts write one set of records in a window while the other set, the window
    # before's, is taken.
    Handoff* spare         # the second set (the first is World.handoff between calls)
    int32_t n_spare
    Handoff* sets[2]       # both, and which one the open window writes:
    int32_t cur
    int32_t* rec_to        # per record: the receiving part
    int32_t* in_off        # per receiving part: its records' places in_off[k] .. in_off[k + 1] - 1,
    int32_t* in_rec        #   by ascending port id; per place its record,
    int32_t* in_pos        #   per record its place
    int32_t rows           # threads with a row in `noted` and `inbox` (grown as more threads run)
    int64_t noted_stride   # int32s per row of `noted`, a multiple of 16 (rows on 64-byte lines)
    int32_t* noted[2]      # per set, thread and place: the packets a part the thread ran put in
                           #   that record in the window so far (0: none; each thread writes its
                           #   own row, and a slice ending inside a window may leave a part's
                           #   smaller count in another row: the largest counts)
    int64_t inbox_stride   # int64s per row of `inbox`, a multiple of 8
    int64_t* inbox         # per thread and part: the earliest packet the thread's parts handed it
                           #   in the open window (INT64_MAX: none)
    int32_t* by_tier       # the parts by (tier, id): each tier's parts in id order
    int32_t* home          # per part the thread that runs it first (`_homes`; -1: not yet shared
                           #   out), apart from `part`: every thread reads every part's home in
                           #   every window, and only `_homes` writes it
    int32_t home_team      # the thread count `home` was made for (0: not made)
    bint deps_due          # some part sent dependency messages (not yet applied)
    int64_t stamp          # bumps at every turn of the threads through the open window's parts
    int32_t* starts        # the starts of children whose last parent was in another part (dependency
                           #   messages): per part a list (PartWin.start_head) of (child, next) pairs
    int64_t n_start
    int64_t cap_start
    int64_t pk_sum         # packets in the parts' pools at the last window end whose
    int64_t qp_sum         #   hand-offs were all taken, plus what runs added since; queue pairs
    bint end_open          # the last window's hand-offs are not all taken: its peak is not yet known
    ThreadCount tc         # how many threads run the windows (thread_count.pxd)

cdef int windows_init(Windows* win, int32_t n, int64_t lookahead) noexcept nogil
cdef void windows_free(Windows* win) noexcept nogil
cdef void windows_set_tiers(Windows* win, int32_t n, const int32_t* tier) noexcept nogil
cdef int windows_run(Sim** parts, int32_t n, Windows* win, int64_t until, int64_t max_events,
                     int32_t threads, bint adapt) noexcept nogil
cdef int64_t windows_next(Sim** parts, int32_t n) noexcept nogil
cdef bint windows_idle(Sim** parts, int32_t n, Windows* win) noexcept nogil
cdef int32_t windows_pending(Windows* win, int32_t r) noexcept nogil
cdef int windows_max_threads() noexcept nogil
